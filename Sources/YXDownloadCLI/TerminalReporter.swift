import YXDownload
import YXTerminal

/// Output on a terminal: finished, skipped and failed downloads scroll as plain lines, and below them
/// a live bar per running download plus an overall line, redrawn in place about ten times a second and
/// fitted to the terminal's width, on a ``TerminalScreen`` (which `-v`'s log lines share, so they too
/// print above the bars).
package final class TerminalReporter: RunReporter {
    private let screen: TerminalScreen
    private let console: Console
    /// At most this many bars; the rest are counted in one line.
    package static let maximumBars = 10
    /// The widest the lines get, in columns.
    package static let widest = 120

    package init(screen: TerminalScreen, console: Console) {
        self.screen = screen
        self.console = console
    }

    package var tickInterval: Double? { 0.1 }

    package func started(_ item: DownloadItem) {}

    package func finished(_ item: DownloadItem, result: DownloadResult, seconds: Double) {
        screen.append(PlainReporter.finishedLine(item, result: result, seconds: seconds))
    }

    package func skipped(_ item: DownloadItem) {
        screen.append(PlainReporter.skippedLine(item))
    }

    package func failed(_ item: DownloadItem, _ failure: DownloadFailure) {
        screen.print([failureLine(item, failure)], toStandardError: true)
    }

    package func waiting(_ item: DownloadItem, _ reason: String) {
        screen.print([waitingLine(item, reason)], toStandardError: true)
    }

    package func tick(active: [ActiveDownload], totals: RunTotals) {
        // Fitted to the window, up to a width that keeps a bar next to its name on a wide one.
        let width = max(20, min(screen.columns - 1, Self.widest))
        var live: [String] = []
        let limit = max(0, min(Self.maximumBars, screen.rows - 3))
        // Bars for the downloads that transfer first: those that only wait for the disk are at 100 %.
        let saving = active.filter { ProgressLine.isSaving($0.progress) }
        let transferring = active.filter { !ProgressLine.isSaving($0.progress) }
        for download in (transferring + saving).prefix(limit) {
            live.append(ProgressLine.download(download, width: width))
        }
        if active.count > limit {
            let hiddenSaving = min(saving.count, active.count - limit)
            let hiddenRunning = active.count - limit - hiddenSaving
            let counts = [(hiddenRunning, "running"), (hiddenSaving, "saving")].filter { $0.0 > 0 }
            live.append("… and " + counts.map { "\($0.0) more \($0.1)" }.joined(separator: ", "))
        }
        let bytesNow = totals.bytes + active.reduce(0) { $0 + max(0, $1.progress.bytesReceived) }
        let speed = active.reduce(0) { $0 + $1.progress.bytesPerSecond }
        live.append(
            ProgressLine.overall(
                totals, running: transferring.count, saving: saving.count, bytesNow: bytesNow, speed: speed, width: width))
        screen.draw(live)
    }

    package func end(totals: RunTotals, stoppedBy stop: RunStop?) {
        screen.close()
        console.writeErr(summaryLine(totals, stoppedBy: stop))
    }

    package func abandon() {
        screen.abandon()
    }
}
