import Foundation
import YXDownload
import YXQueue
import YXTestServer
import YXTerminal

/// The first part of the demo: a `Downloader` on the demo's dispatcher starts one download per sample
/// file; each download's handle feeds a row of the ``ProgressBoard`` with its byte progress, then with its
/// typed result.
enum DownloadStage {
    /// Transfers running at once; the rest wait in the dispatcher's transfer queue.
    static let transfersAtOnce = 4

    /// Downloads `files` from `server` into `directory`; returns how each download ended.
    static func run(
        _ files: [DemoFile], from server: TestHTTPServer, into directory: URL, on dispatcher: Dispatcher,
        terminal: Console
    ) async -> [DownloadOutcome] {
        // The downloader owns the transfer engine (its threads, connections and disk flushes) and sets the
        // download queues' limits on the demo's dispatcher, so Ctrl-C (`dispatcher.cancelAll()`) reaches
        // the downloads too.
        let downloader = Downloader(
            configuration: .init(name: "demo", maxConcurrentTransfers: transfersAtOnce), dispatcher: dispatcher)
        let board = ProgressBoard(files: files, console: terminal)
        board.start()
        await withTaskGroup(of: Void.self) { group in
            for (index, file) in files.enumerated() {
                var options = DownloadOptions()
                options.connections = file.connections
                options.retryPolicy.initialDelay = 0.5  // the flaky file resumes half a second after the cut
                let handle = downloader.start(
                    server.url(file.path), into: directory,
                    checksum: file.expectedChecksum(),  // checked before the file gets its final name
                    options: options)
                board.watch(handle, row: index)
                group.addTask {
                    for await progress in handle.progressUpdates() { board.update(index, with: progress) }
                    do {
                        board.finished(index, with: try await handle.value)  // a DownloadResult: no cast
                    } catch is CancellationError {
                        board.canceled(index)
                    } catch {
                        board.failed(index, with: error)
                    }
                }
            }
        }
        board.stop()
        downloader.shutdown()  // its lanes' threads end now, not after their idle time
        return board.outcomes()
    }
}
