// The YXQueue demo. No internet needed:
//
//   1. a loopback HTTP server (YXTestServer) serves eight generated sample files;
//   2. a `Downloader` fetches them through the demo's `Dispatcher`, with a live progress board fed by each
//      download's handle (byte progress, then its typed `DownloadResult`);
//   3. eight `ChecksumJob`s (a custom `JobDefinition`: read → hash → write) fingerprint the files, half of them
//      reported to a `JobDelegate`, half awaited with async/await;
//   4. a summary; exit status 0 when everything worked, 1 otherwise (130 after Ctrl-C).
//
//   scripts/demo                       (or: swift run -c release YXQueueDemo)
import Foundation
import YXDownload
import YXQueue
import YXTestServer
import YXTerminal

let terminal = Console.standard
let arguments = CommandLine.arguments.dropFirst()
if arguments.contains("-h") || arguments.contains("--help") {
    terminal.line(
        """
        usage: YXQueueDemo            (scripts/demo builds and runs it)

        Serves eight sample files on 127.0.0.1, downloads them into a new temporary
        folder with live progress, fingerprints them with a custom Job, and prints a
        summary. Exit status: 0 when all went well, 1 when something failed, 130
        after Ctrl-C. No internet needed.
        """)
    exit(0)
}
if let extra = arguments.first {
    terminal.errorLine("YXQueueDemo: unexpected argument '\(extra)' (see --help)")
    exit(2)
}

// 1. The sample files, on a server on this machine.
let files = DemoFile.catalog
let server: TestHTTPServer
let directory = FileManager.default.temporaryDirectory
    .appendingPathComponent("yxqueue-demo-" + UUID().uuidString.prefix(8).lowercased(), isDirectory: true)
do {
    server = try await TestHTTPServer.start()  // 127.0.0.1, a free port
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
} catch {
    terminal.errorLine("YXQueueDemo: cannot start: \(error)")
    exit(1)
}
for file in files { server.serve(file.path, file.resource) }

let totalBytes = files.reduce(Int64(0)) { $0 + $1.size }
terminal.line("YXQueue demo: \(files.count) sample files, \(ByteFormatting.bytes(totalBytes)), from a server on this machine")
terminal.line("  server     \(server.baseURL.absoluteString) (YXTestServer, paced so you can watch)")
terminal.line("  folder     \(directory.path)")
terminal.line(
    "  downloads  a Downloader, \(DownloadStage.transfersAtOnce) transfers at a time, SHA-256 checked")
for file in files {
    if let note = file.note { terminal.line("             \(file.name): \(note)") }
}
terminal.line()

// 2. Download them. Ctrl-C cancels every job of the dispatcher.
// Its queues' limits: the downloads' (4 transfers at a time) and the checksum job's three queues.
let dispatcher = Dispatcher(
    name: "demo",
    queues: DownloadQueue.limits(transfers: DownloadStage.transfersAtOnce).merging(ChecksumJob.queues) { $1 })
let interruption = Interruption(dispatcher: dispatcher, terminal: terminal)
let downloadStart = ContinuousClock.now
let downloads = await DownloadStage.run(files, from: server, into: directory, on: dispatcher, terminal: terminal)
let downloadSeconds = seconds(from: downloadStart)
terminal.line()

// 3. Fingerprint what arrived, with a job of our own.
var checksums: ChecksumStage.Outcome?
if !interruption.happened {
    let downloaded = downloads.compactMap { $0.result?.file }
    checksums = await ChecksumStage.run(files: downloaded, on: dispatcher, terminal: terminal)
    terminal.line()
}

// 4. Stop the server (the downloader shut its engine down at the end of its stage), then report.
let requests = server.requestCount
let connections = server.connectionCount
try? await server.stop()

let summary = DemoSummary(
    downloads: downloads, downloadSeconds: downloadSeconds, checksums: checksums, requests: requests,
    connections: connections, queues: dispatcher.queueNames, directory: directory,
    interrupted: interruption.happened)
for line in summary.lines { terminal.line(line) }
exit(summary.exitStatus)
