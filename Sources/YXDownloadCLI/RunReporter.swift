import Foundation
import YXDownload
import YXTerminal

/// One download of the run, as the reporters show it.
package struct DownloadItem: Sendable {
    /// The URL without credentials.
    package var url: String
    /// The final file as the user would type it (`--dir` as given, then the name).
    package var file: String
    /// The file's name alone, for bars.
    package var name: String

    package init(url: String, file: String, name: String) {
        self.url = url
        self.file = file
        self.name = name
    }
}

/// A download that is running, as a reporter sees it at a tick.
package struct ActiveDownload: Sendable {
    package var item: DownloadItem
    package var progress: DownloadProgress
}

/// The run's counters.
package struct RunTotals: Sendable, Equatable {
    /// Valid entries in the list.
    package var listed = 0
    package var done = 0
    package var skipped = 0
    package var failed = 0
    package var canceled = 0
    /// Bytes received from the network in this run, by downloads that ended (finished, failed or
    /// canceled).
    package var bytes: Int64 = 0
    /// Seconds since the run began.
    package var seconds: Double = 0

    package var ended: Int { done + skipped + failed + canceled }
    /// Entries of the list that never began: after a signal, or a list that changed under the run.
    package var notStarted: Int { max(0, listed - ended) }

    package init(
        listed: Int = 0, done: Int = 0, skipped: Int = 0, failed: Int = 0, canceled: Int = 0, bytes: Int64 = 0,
        seconds: Double = 0
    ) {
        (self.listed, self.done, self.skipped, self.failed, self.canceled) = (listed, done, skipped, failed, canceled)
        (self.bytes, self.seconds) = (bytes, seconds)
    }
}


/// A failed download, as the reporters show it.
package struct DownloadFailure: Sendable {
    /// What went wrong and what to do, on one line (``FailureMessage``).
    package var message: String
    /// The HTTP status of the final response, when there was one.
    package var httpStatus: Int?
    /// Whether the download failed for good; a worker's attempt that went back to its queue for a later
    /// one is not (`again` and `"event":"requeue"` instead of `fail`).
    package var isFinal: Bool

    package init(message: String, httpStatus: Int?, isFinal: Bool = true) {
        self.message = message
        self.httpStatus = httpStatus
        self.isFinal = isFinal
    }
}

/// Shows what happens during a run. Every call comes on the run's queue, one at a time.
package protocol RunReporter: AnyObject {
    /// How often ``tick(active:totals:)`` is wanted (nil: never).
    var tickInterval: Double? { get }
    func started(_ item: DownloadItem)
    func finished(_ item: DownloadItem, result: DownloadResult, seconds: Double)
    func skipped(_ item: DownloadItem)
    func failed(_ item: DownloadItem, _ failure: DownloadFailure)
    /// A download that waits before it can go on (a worker's `.part` that another process writes), with why.
    func waiting(_ item: DownloadItem, _ reason: String)
    func tick(active: [ActiveDownload], totals: RunTotals)
    /// The run is over: clear live output and print the summary; `stop` says why it ended early, if it
    /// did.
    func end(totals: RunTotals, stoppedBy stop: RunStop?)
    /// The process exits now (a second Ctrl-C): give the terminal back as it was.
    func abandon()
}

extension RunReporter {
    /// The one-line summary on standard error that every mode prints.
    package func summaryLine(_ totals: RunTotals, stoppedBy stop: RunStop?) -> String {
        var line = "yxdownload: \(totals.done) done, \(totals.skipped) skipped, \(totals.failed) failed"
        if totals.canceled > 0 || stop != nil { line += ", \(totals.canceled) canceled" }
        let speed = totals.seconds > 0 ? Double(totals.bytes) / totals.seconds : 0
        line += "; \(ByteFormatting.bytes(totals.bytes)) in \(ByteFormatting.elapsed(totals.seconds))"
        line += " (\(ByteFormatting.rate(speed)))\n"
        let notStarted = totals.notStarted > 0 ? "; \(totals.notStarted) not started" : ""
        switch stop {
        case .signal(let name):
            line += "yxdownload: interrupted by \(name)\(notStarted). Partial files (.part) are kept: run the same "
                + "command again to resume.\n"
        case .listChanged(let how):
            line += "yxdownload: \(how)\(notStarted): check the list, then run the same command again.\n"
        case nil:
            break
        }
        return line
    }

    /// `wait  FILE  REASON (URL)`: the line of a download that waits, on standard error.
    package func waitingLine(_ item: DownloadItem, _ reason: String) -> String {
        "wait  \(item.file)  \(reason)" + (item.url.isEmpty ? "" : " (\(item.url))")
    }

    /// `fail  FILE  MESSAGE (URL)`: the line of a failed download, on standard error.
    package func failureLine(_ item: DownloadItem, _ failure: DownloadFailure) -> String {
        (failure.isFinal ? "fail  " : "again ") + "\(item.file)  \(failure.message)" + (item.url.isEmpty ? "" : " (\(item.url))")
    }

    package func abandon() {}
}
