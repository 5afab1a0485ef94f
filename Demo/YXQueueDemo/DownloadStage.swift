import Foundation
import YXDownload
import YXQueue
import YXTestServer

/// The first part of the demo: one `DownloadJob` per sample file, all on one dispatcher, shown live on
/// a ``ProgressBoard``.
enum DownloadStage {
    /// Transfers running at once; the rest wait in the dispatcher's transfer queue.
    static let transfersAtOnce = 4

    /// Downloads `files` from `server` into `directory`; returns how each download ended.
    static func run(
        _ files: [DemoFile], from server: TestHTTPServer, into directory: URL, on dispatcher: Dispatcher,
        terminal: Terminal
    ) async -> [DownloadOutcome] {
        let board = ProgressBoard(files: files, terminal: terminal)
        var jobs: [DownloadJob] = []
        for (index, file) in files.enumerated() {
            var options = DownloadOptions()
            options.connections = file.connections
            options.maxConcurrentTransfers = transfersAtOnce
            options.retry.initialDelay = 0.5  // the flaky file resumes half a second after the cut
            let job = DownloadJob(
                url: server.url(file.path),
                directory: directory,
                checksum: file.expectedChecksum(),  // checked before the file gets its final name
                options: options,
                tag: index,  // the board's row
                callbackQueue: board.queue)  // every callback of every download on one serial queue
            board.watch(job)
            jobs.append(job)
        }

        board.start()
        for job in jobs { dispatcher.add(job) }
        await dispatcher.waitForAllJobs()
        board.stop()
        return board.outcomes()
    }
}
