import YXDownload
import YXTerminal

/// Output when standard output is not a terminal (or with `-q`): one line per finished or skipped
/// download on standard output, one per failure on standard error, no escape codes.
///
/// ```
/// done  downloads/a.iso  4.0 MiB in 0.41 s (9.8 MiB/s)
/// skip  downloads/b.iso  exists (--overwrite replaces it)
/// ```
/// and on standard error `fail  downloads/c.iso  HTTP 404 Not Found: the server has no file at this URL; check
/// the URL (http://host/c.iso)` (see ``FailureMessage``).
package final class PlainReporter: RunReporter, Sendable {
    private let console: Console
    private let quiet: Bool

    package init(console: Console, quiet: Bool) {
        self.console = console
        self.quiet = quiet
    }

    package var tickInterval: Double? { nil }

    package func started(_ item: DownloadItem) {}

    package func finished(_ item: DownloadItem, result: DownloadResult, seconds: Double) {
        guard !quiet else { return }
        console.writeOut(Self.finishedLine(item, result: result, seconds: seconds) + "\n")
    }

    package func skipped(_ item: DownloadItem) {
        guard !quiet else { return }
        console.writeOut(Self.skippedLine(item) + "\n")
    }

    package func failed(_ item: DownloadItem, _ failure: DownloadFailure) {
        console.writeErr(failureLine(item, failure) + "\n")
    }

    package func waiting(_ item: DownloadItem, _ reason: String) {
        console.writeErr(waitingLine(item, reason) + "\n")
    }

    package func tick(active: [ActiveDownload], totals: RunTotals) {}

    package func end(totals: RunTotals, stoppedBy stop: RunStop?) {
        console.writeErr(summaryLine(totals, stoppedBy: stop))
    }

    package static func skippedLine(_ item: DownloadItem) -> String {
        "skip  \(item.file)  exists (--overwrite replaces it)"
    }

    package static func finishedLine(_ item: DownloadItem, result: DownloadResult, seconds: Double) -> String {
        var line = "done  \(item.file)  \(ByteFormatting.bytes(result.bytes))"
        if result.outcome == .finalizedPart {
            line += " (completed from an earlier run's .part)"
        } else {
            let speed = seconds > 0 ? Double(result.bytesReceived) / seconds : 0
            line += " in \(ByteFormatting.elapsed(seconds)) (\(ByteFormatting.rate(speed)))"
            if result.resumedFrom > 0 { line += ", resumed at \(ByteFormatting.bytes(result.resumedFrom))" }
        }
        return line
    }
}
