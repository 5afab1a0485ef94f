import YXDownload
import YXTerminal

/// Builds the live lines of the terminal display, fitted to a width: one per running download and one
/// for the whole run. Pure functions of their input, so tests check them at a fixed width.
///
/// ```
/// debian.iso      [#########>              ]  38%  390.1 MiB/1.00 GiB   24.5 MiB/s  ETA 0:27
/// [3/10] 1.21 GiB  24.5 MiB/s  elapsed 0:51  1 running, 2 done, 0 skipped, 1 failed
/// ```
///
/// A download whose bytes are all in and that waits for the disk before its rename counts as "saving"
/// (`… 5 running, 3 saving, …`): `-j` bounds the downloads that transfer, not those.
enum ProgressLine {
    /// One running download. Never wider than `width` columns.
    static func download(_ download: ActiveDownload, width: Int) -> String {
        let progress = download.progress
        let percent = progress.fraction.map { "\(Int(($0 * 100).rounded(.down)))%" } ?? "--"
        let size = progress.total.map { ByteFormatting.bytes(progress.bytes) + "/" + ByteFormatting.bytes($0) }
            ?? ByteFormatting.bytes(progress.bytes)
        let eta: Double? = progress.total.flatMap { total in
            progress.bytesPerSecond > 0 ? Double(max(0, total - progress.bytes)) / progress.bytesPerSecond : nil
        }
        let fields = [
            TextWidth.padLeft(percent, to: 4), TextWidth.padLeft(size, to: 19),
            TextWidth.padLeft(ByteFormatting.rate(progress.bytesPerSecond), to: 12), "ETA " + ByteFormatting.duration(eta),
        ]
        // Drop the least useful fields until the name has room for 16 columns.
        var shown = fields
        for dropping in [3, 2, 1] where width - TextWidth.of(shown.joined(separator: " ")) < 16 + 2 {
            shown.remove(at: dropping)
        }
        let right = " " + shown.joined(separator: " ")
        var room = width - TextWidth.of(right)
        var bar = ""
        if room >= 34, let fraction = progress.fraction {
            let barWidth = min(30, room - 24)
            bar = " " + ProgressBar.text(fraction, width: barWidth)
            room -= barWidth + 3
        } else if room >= 34 {
            let barWidth = min(30, room - 24)
            bar = " [" + String(repeating: " ", count: barWidth) + "]"
            room -= barWidth + 3
        }
        return TextWidth.fit(TextWidth.pad(download.item.name, to: max(1, room)) + bar + right, to: width)
    }

    /// Whether a running download has all its bytes and only waits for the disk and its final name (with
    /// `-j N`, up to N others then transfer meanwhile): counted as "saving", not as "running".
    static func isSaving(_ progress: DownloadProgress) -> Bool {
        guard let total = progress.total else { return false }
        return progress.bytes >= total
    }

    /// The whole run. Never wider than `width` columns. `running` counts the downloads that transfer,
    /// `saving` those whose bytes are all in and that wait for the disk (shown only when there are some).
    static func overall(
        _ totals: RunTotals, running: Int, saving: Int = 0, bytesNow: Int64, speed: Double, width: Int
    ) -> String {
        // Most useful first: on a narrow terminal the end of the line is cut.
        // A worker's queue has no end it knows of (`listed` 0): only what ended.
        let count = totals.listed > 0 ? "\(totals.ended)/\(totals.listed)" : "\(totals.ended)"
        var line = "[\(count)] \(ByteFormatting.bytes(bytesNow))  \(ByteFormatting.rate(speed))"
        line += "  elapsed \(ByteFormatting.duration(totals.seconds, roundingUp: false))  \(running) running, "
        if saving > 0 { line += "\(saving) saving, " }
        line += "\(totals.done) done, \(totals.skipped) skipped, \(totals.failed) failed"
        return TextWidth.fit(line, to: width)
    }
}
