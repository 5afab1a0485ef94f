import Foundation
import YXDownload
import YXTerminal

/// One download of the run, as the reporters show it.
struct DownloadItem: Sendable {
    /// The URL without credentials.
    var url: String
    /// The final file as the user would type it (`--dir` as given, then the name).
    var file: String
    /// The file's name alone, for bars.
    var name: String
}

/// A download that is running, as a reporter sees it at a tick.
struct ActiveDownload: Sendable {
    var item: DownloadItem
    var progress: DownloadProgress
}

/// The run's counters.
struct RunTotals: Sendable, Equatable {
    /// Valid entries in the list.
    var listed = 0
    var done = 0
    var skipped = 0
    var failed = 0
    var canceled = 0
    /// Bytes received from the network in this run, by downloads that ended (finished, failed or
    /// canceled).
    var bytes: Int64 = 0
    /// Seconds since the run began.
    var seconds: Double = 0

    var ended: Int { done + skipped + failed + canceled }
}

/// A failed download, as the reporters show it.
struct DownloadFailure: Sendable {
    /// What went wrong and what to do, on one line (``FailureMessage``).
    var message: String
    /// The HTTP status of the final response, when there was one.
    var httpStatus: Int?
}

/// Shows what happens during a run. Every call comes on the run's queue, one at a time.
protocol RunReporter: AnyObject {
    /// How often ``tick(active:totals:)`` is wanted (nil: never).
    var tickInterval: Double? { get }
    func started(_ item: DownloadItem)
    func finished(_ item: DownloadItem, result: DownloadResult, seconds: Double)
    func skipped(_ item: DownloadItem)
    func failed(_ item: DownloadItem, _ failure: DownloadFailure)
    func tick(active: [ActiveDownload], totals: RunTotals)
    /// The run is over: clear live output and print the summary.
    func end(totals: RunTotals, interruptedBy signalName: String?)
    /// The process exits now (a second Ctrl-C): give the terminal back as it was.
    func abandon()
}

extension RunReporter {
    /// The one-line summary on standard error that every mode prints.
    func summaryLine(_ totals: RunTotals, interruptedBy signalName: String?) -> String {
        var line = "yxdownload: \(totals.done) done, \(totals.skipped) skipped, \(totals.failed) failed"
        if totals.canceled > 0 || signalName != nil { line += ", \(totals.canceled) canceled" }
        let speed = totals.seconds > 0 ? Double(totals.bytes) / totals.seconds : 0
        line += "; \(ByteFormatting.bytes(totals.bytes)) in \(ByteFormatting.elapsed(totals.seconds))"
        line += " (\(ByteFormatting.rate(speed)))\n"
        if let signalName {
            let notStarted = totals.listed - totals.ended
            line += "yxdownload: interrupted by \(signalName)"
            if notStarted > 0 { line += "; \(notStarted) not started" }
            line += ". Partial files (.part) are kept: run the same command again to resume.\n"
        }
        return line
    }

    /// `fail  FILE  MESSAGE (URL)`: the line of a failed download, on standard error.
    func failureLine(_ item: DownloadItem, _ failure: DownloadFailure) -> String {
        "fail  \(item.file)  \(failure.message) (\(item.url))"
    }

    func abandon() {}
}
