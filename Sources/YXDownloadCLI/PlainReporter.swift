import YXDownload

/// Output when standard output is not a terminal (or with `-q`): one line per finished or skipped
/// download on standard output, one per failure on standard error, no escape codes.
///
/// ```
/// done  downloads/a.iso  4.0 MiB in 0.41 s (9.8 MiB/s)
/// skip  downloads/b.iso  exists (--overwrite replaces it)
/// ```
/// and on standard error `fail  downloads/c.iso  HTTP 404 (http://host/c.iso)`.
final class PlainReporter: RunReporter {
    private let console: Console
    private let quiet: Bool

    init(console: Console, quiet: Bool) {
        self.console = console
        self.quiet = quiet
    }

    var tickInterval: Double? { nil }

    func started(_ item: DownloadItem) {}

    func finished(_ item: DownloadItem, result: DownloadResult, seconds: Double) {
        guard !quiet else { return }
        console.writeOut(Self.finishedLine(item, result: result, seconds: seconds) + "\n")
    }

    func skipped(_ item: DownloadItem) {
        guard !quiet else { return }
        console.writeOut("skip  \(item.file)  exists (--overwrite replaces it)\n")
    }

    func failed(_ item: DownloadItem, error: any Error) {
        console.writeErr("fail  \(item.file)  \(describe(error)) (\(item.url))\n")
    }

    func tick(active: [ActiveDownload], totals: RunTotals) {}

    func end(totals: RunTotals, interruptedBy signalName: String?) {
        console.writeErr(summaryLine(totals, interruptedBy: signalName))
    }

    static func finishedLine(_ item: DownloadItem, result: DownloadResult, seconds: Double) -> String {
        var line = "done  \(item.file)  \(ByteFormatting.bytes(result.bytes))"
        if result.outcome == .finalizedExisting {
            line += " (completed from an earlier run's .part)"
        } else {
            let speed = seconds > 0 ? Double(result.bytesReceived) / seconds : 0
            line += " in \(ByteFormatting.elapsed(seconds)) (\(ByteFormatting.rate(speed)))"
            if result.resumedFrom > 0 { line += ", resumed at \(ByteFormatting.bytes(result.resumedFrom))" }
        }
        return line
    }
}
