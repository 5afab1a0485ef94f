import Foundation
import XCTest
import YXDownload
import YXQueue
import YXTestServer

// The code of Sources/YXDownload/YXDownload.docc/GettingStarted.md, compiled and run against a server on
// 127.0.0.1 (DocumentationTests checks that every line of the article's Swift blocks is here, in order,
// but the lines marked `// yours`).
final class GettingStartedTests: XCTestCase {
    func testTheArticleRuns() async throws {
        let http = try await TestHTTPServer.start()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("yxdownload-article-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let previous = FileManager.default.currentDirectoryPath
        _ = FileManager.default.changeCurrentDirectoryPath(folder.path)
        defer {
            _ = FileManager.default.changeCurrentDirectoryPath(previous)
            try? FileManager.default.removeItem(at: folder)
        }
        let isoSize: Int64 = 16 << 20
        http.serve("/files/big.iso", Resource(.generated(size: isoSize, seed: 1), etag: "iso"))
        for (index, name) in ["a.bin", "b.bin", "c.bin", "d.bin"].enumerated() {
            http.serve("/files/\(name)", Resource(.generated(size: 100_000, seed: UInt64(10 + index))))
        }
        http.serve("/files/missing.iso", .status(404))

        let server = http.url("/files/")      // yours
        let downloads = URL(fileURLWithPath: "downloads")
        let downloader = Downloader(configuration: .init(maxConcurrentTransfers: 8))

        let iso = server.appendingPathComponent("big.iso")
        let result = try await downloader.download(iso, into: downloads)     // downloads/big.iso
        print(result.outcome, result.file.lastPathComponent, result.bytes)   // downloaded big.iso 8388608
        XCTAssertEqual(result.outcome, .downloaded)
        XCTAssertEqual(result.bytes, isoSize)

        let handle = downloader.start(iso, to: downloads.appendingPathComponent("copy.iso"))
        var updates = 0
        for await progress in handle.progressUpdates(every: .milliseconds(250)) {
            print(progress.bytes, "of", progress.total ?? -1, "bytes,", Int(progress.bytesPerSecond), "bytes/s")
            updates += 1
        }
        let copy = try await handle.value                 // a DownloadResult
        print(copy.file.lastPathComponent)
        XCTAssertGreaterThanOrEqual(updates, 1, "the sequence ends with the final figures")
        XCTAssertEqual(copy.file.lastPathComponent, "copy.iso")

        let names = ["a.bin", "b.bin", "c.bin", "d.bin"]
        let handles = names.map { downloader.start(server.appendingPathComponent($0), into: downloads) }
        var done: [String] = []
        for handle in handles {
            do {
                let done = try await handle.value
                print("done", done.file.lastPathComponent)
            } catch {
                print("fail", handle.job.url, error)
            }
            if let name = handle.result?.file.lastPathComponent { done.append(name) }
        }
        XCTAssertEqual(done, names)

        var tuned = DownloadOptions()
        tuned.connections = 4                          // up to 4 ranged parts, where the server accepts ranges
        tuned.minimumSegmentSize = 1 << 20             // files under 1 MiB are never split
        tuned.retryPolicy = RetryPolicy(retries: 3, initialDelay: 0.5)   // 4 tries (per part): waits 0.5 s, 1 s, 2 s
        tuned.connectTimeout = 10                      // seconds to establish a connection
        tuned.stallTimeout = 20                        // no byte for 20 s ends the try (then it is retried)
        tuned.headers = ["Authorization: Bearer 0123456789"]
        tuned.userAgent = "fetcher/1.0"
        tuned.computeSHA256 = true                     // DownloadResult.sha256, even without a checksum
        tuned.overwrite = true                         // replace an existing file instead of skipping it

        let expected = Checksum(parsing: "sha-256=\(GeneratedContent.sha256(size: isoSize, seed: 1))")   // yours
        let verified = try await downloader.download(
            iso, to: downloads.appendingPathComponent("verified.iso"), checksum: expected, options: tuned)
        print(verified.sha256 ?? "")
        XCTAssertEqual(verified.sha256, GeneratedContent.sha256(size: isoSize, seed: 1))

        var insecure = DownloadOptions()
        insecure.verifyTLS = false
        XCTAssertFalse(insecure.verifyTLS)

        downloader.setMaxSpeed(bytesPerSecond: 20 << 20)   // 20 MiB/s over all downloads

        // Slow enough that the cancel below comes before the end even when this task wakes a second late.
        http.serve("/files/big.iso", Resource(.generated(size: isoSize, seed: 1), etag: "iso", bytesPerSecond: 6 << 20))   // yours
        let resumable = downloader.start(iso, to: downloads.appendingPathComponent("resumed.iso"))
        try await Task.sleep(for: .milliseconds(500))
        // Not in the article: on a slow machine (the thread sanitizer) the half second can pass before a byte came.
        for _ in 0..<1_200 where resumable.progress.bytesReceived == 0 { try await Task.sleep(for: .milliseconds(50)) }
        resumable.cancel()                             // resumed.iso.part stays
        _ = try? await resumable.value

        let resumed = try await downloader.download(iso, to: downloads.appendingPathComponent("resumed.iso"))
        print(resumed.resumedFrom, resumed.bytesReceived)   // bytes that came from the .part, bytes received
        downloader.setMaxSpeed(bytesPerSecond: nil)         // no limit
        XCTAssertEqual(resumed.resumedFrom + resumed.bytesReceived, isoSize)
        XCTAssertGreaterThan(resumed.resumedFrom, 0)   // yours

        let missing = server.appendingPathComponent("missing.iso")
        var status = 0
        do {
            _ = try await downloader.download(missing, into: downloads)
        } catch let error as DownloadError {
            print(error.kind, error.httpStatus ?? 0, error.isTransient)   // httpStatus 404 false
            status = error.httpStatus ?? 0
        }
        XCTAssertEqual(status, 404)

        downloader.shutdown()
        XCTAssertTrue(downloader.isShutDown)
        try await http.stop()
    }
}
