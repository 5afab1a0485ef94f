import YXDownload

/// Output on a terminal: finished, skipped and failed downloads scroll as plain lines, and below them
/// a live bar per running download plus an overall line, redrawn in place about ten times a second and
/// fitted to the terminal's width.
///
/// Each redraw moves the cursor up over the previous bars, clears to the end of the screen and writes
/// the new lines, in a single write. The cursor is hidden while bars are shown.
final class TerminalReporter: RunReporter {
    private let console: Console
    private let quiet: Bool
    /// Bars drawn by the last redraw (the cursor is on the line below them).
    private var drawnLines = 0
    /// Lines to print above the bars at the next redraw.
    private var pending: [String] = []
    /// At most this many bars; the rest are counted in one line.
    static let maximumBars = 10

    init(console: Console, quiet: Bool) {
        self.console = console
        self.quiet = quiet
    }

    var tickInterval: Double? { 0.1 }

    func started(_ item: DownloadItem) {}

    func finished(_ item: DownloadItem, result: DownloadResult, seconds: Double) {
        if !quiet { pending.append(PlainReporter.finishedLine(item, result: result, seconds: seconds)) }
    }

    func skipped(_ item: DownloadItem) {
        if !quiet { pending.append("skip  \(item.file)  exists (--overwrite replaces it)") }
    }

    func failed(_ item: DownloadItem, error: any Error) {
        // Failures go to standard error; clear the bars first so the two streams do not mix on screen.
        console.writeOut(frame(permanent: pending, live: []))
        pending = []
        console.writeErr("fail  \(item.file)  \(describe(error)) (\(item.url))\n")
    }

    func tick(active: [ActiveDownload], totals: RunTotals) {
        let (columns, rows) = console.size()
        let width = max(20, columns - 1)
        var live: [String] = []
        if !quiet {
            let limit = max(0, min(Self.maximumBars, rows - 3))
            for download in active.prefix(limit) {
                live.append(ProgressLine.download(download, width: width))
            }
            if active.count > limit { live.append("… and \(active.count - limit) more running") }
        }
        let bytesNow = totals.bytes + active.reduce(0) { $0 + max(0, $1.progress.bytesReceived) }
        let speed = active.reduce(0) { $0 + $1.progress.bytesPerSecond }
        live.append(ProgressLine.overall(totals, running: active.count, bytesNow: bytesNow, speed: speed, width: width))
        console.writeOut(frame(permanent: pending, live: live))
        pending = []
    }

    func end(totals: RunTotals, interruptedBy signalName: String?) {
        console.writeOut(frame(permanent: pending, live: []) + "\u{1B}[?25h")
        pending = []
        console.writeErr(summaryLine(totals, interruptedBy: signalName))
    }

    /// The escape codes and text that replace the previous bars with `permanent` lines then `live` ones.
    private func frame(permanent: [String], live: [String]) -> String {
        var text = drawnLines > 0 ? "\r\u{1B}[\(drawnLines)A\u{1B}[J" : ""
        if drawnLines == 0 && !live.isEmpty { text += "\u{1B}[?25l" }
        for line in permanent { text += line + "\n" }
        for line in live { text += line + "\n" }
        drawnLines = live.count
        return text
    }
}
