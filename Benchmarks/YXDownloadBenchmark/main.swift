// YXDownload memory and throughput on one large file, served on loopback by YXTestServer.
//
//   swift run -c release YXDownloadBenchmark [--size-mib N] [--connections N]
//
// Downloads one generated file (default 1 GiB) with one connection and then with N (default 8),
// and prints, for each: wall time, throughput, and the process's resident memory before and at its peak
// (sampled every 10 ms while the download runs). The file's SHA-256 is checked against the generator's.
import Foundation
import YXDownload
@_spi(YXQueueInternals) import YXQueue
import YXTestServer

let arguments = CommandLine.arguments
func value(_ name: String, _ fallback: Int) -> Int {
    arguments.firstIndex(of: name).flatMap { Int(arguments[$0 + 1]) } ?? fallback
}
let size = Int64(value("--size-mib", 1024)) << 20
let connections = value("--connections", 8)

func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    return (fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func mib(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }

let server = try await TestHTTPServer.start()
server.serve("/big.bin", Resource(.generated(size: size, seed: 42), etag: "big"))
let expected = GeneratedContent.sha256(size: size, seed: 42)
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("yxdownload-bench-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }

print("YXDownload: one \(size >> 20) MiB file over loopback (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
let downloader = Downloader(configuration: .init(name: "bench", maxConcurrentTransfers: max(1, connections)))
for count in [1, connections] {
    var options = DownloadOptions()
    options.connections = count
    options.computeSHA256 = true
    let file = directory.appendingPathComponent("big-x\(count).bin")
    let before = residentBytes()
    let peak = Locked(before)
    let sampler = DispatchSource.makeTimerSource(queue: .global())
    sampler.schedule(deadline: .now(), repeating: .milliseconds(10))
    sampler.setEventHandler { let now = residentBytes(); peak.withLock { $0 = max($0, now) } }
    sampler.resume()
    let started = Date()
    let result = try await downloader.download(server.url("/big.bin"), to: file, options: options)
    let seconds = Date().timeIntervalSince(started)
    sampler.cancel()
    let ok = result.sha256 == expected
    print(
        "  -x \(count): \(String(format: "%6.2f s", seconds))  \(String(format: "%7.1f MiB/s", Double(size) / 1_048_576 / seconds))"
            + "  RSS before \(mib(before)), peak \(mib(peak.withLock { $0 })) (+\(mib(peak.withLock { $0 } - before)))"
            + "  sha-256 \(ok ? "ok" : "MISMATCH")")
    try? FileManager.default.removeItem(at: file)
}
downloader.shutdown()
try await server.stop()
