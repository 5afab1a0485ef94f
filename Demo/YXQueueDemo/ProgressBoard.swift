import Dispatch
import Foundation
import Synchronization
import YXDownload
import YXQueue
import YXTerminal

/// The live list of downloads: one row per file, fed by each download's handle (its byte progress
/// updates, then its typed result) and redrawn ten times a second.
///
/// On a terminal every row stays on screen and is redrawn in place by the command line's
/// ``TerminalScreen`` (the renderer `yxdownload` uses for its bars: the cursor goes back up over the
/// previous frame, each line is cleared and rewritten, all in one write); at the end the last frame
/// stays. Elsewhere (a pipe, a file) the board prints one line per finished or failed file and an
/// overall line about once a second.
///
/// The feeding methods (``update(_:with:)``, ``finished(_:with:)``, …) may be called from any task; the
/// redraw timer runs on ``queue``. The state sits behind a `Mutex`, which makes the class `Sendable`
/// with no `@unchecked`.
final class ProgressBoard: Sendable {
    /// Where the board's timer fires.
    let queue = DispatchQueue(label: "YXQueueDemo.ProgressBoard")

    private let console: Console
    private let screen: TerminalScreen
    private let state: Mutex<State>

    /// Everything that changes, behind ``state``.
    private struct State {
        var rows: [Row]
        var startedAt = ContinuousClock.now
        /// When the last plain progress line was printed.
        var lastProgressLine = ContinuousClock.now
        var isRunning = false
        /// Fires ``tick()`` on ``queue`` between ``start()`` and ``stop()``. (Dispatch sources are not
        /// `Sendable`; kept in the locked state, it is.)
        var timer: (any DispatchSourceTimer)?
    }

    /// One file on the board.
    private struct Row {
        let file: DemoFile
        var handle: DownloadHandle?
        var phase = Phase.queued
        /// The last byte progress of the download.
        var progress = DownloadProgress(bytes: 0, total: nil, bytesPerSecond: 0)
        /// When the first byte arrived.
        var firstByteAt: ContinuousClock.Instant?

        /// Started and not ended.
        var isActive: Bool {
            if case .started = phase { return true }
            return false
        }

        /// When the job started, if it is running.
        var startedAt: ContinuousClock.Instant? {
            if case .started(let at) = phase { return at }
            return nil
        }
    }

    /// Where a download is.
    private enum Phase {
        /// Not started yet: waiting for a transfer slot.
        case queued
        /// Its first step runs; bytes may not flow yet.
        case started(at: ContinuousClock.Instant)
        case finished(DownloadResult, seconds: Double)
        case failed(String)
        case canceled
    }

    /// Creates a board with a row per file, in this order.
    init(files: [DemoFile], console: Console) {
        self.console = console
        self.screen = TerminalScreen(console: console)
        self.state = Mutex(State(rows: files.map { Row(file: $0) }))
    }

    /// Shows the download of `handle` in row `row`.
    func watch(_ handle: DownloadHandle, row: Int) {
        state.withLock { $0.rows[row].handle = handle }
    }

    // MARK: - Feeding (any task)

    /// The download of `row` made progress.
    func update(_ row: Int, with progress: DownloadProgress) {
        state.withLock { s in
            s.rows[row].progress = progress
            if s.rows[row].firstByteAt == nil && progress.bytesReceived > 0 { s.rows[row].firstByteAt = .now }
            if case .queued = s.rows[row].phase, progress.bytesReceived > 0 { s.rows[row].phase = .started(at: .now) }
        }
    }

    /// The download of `row` finished: `result` is its typed value.
    func finished(_ row: Int, with result: DownloadResult) {
        let line = state.withLock { s -> String in
            let current = s.rows[row]
            let elapsed = seconds(from: current.firstByteAt ?? current.startedAt ?? s.startedAt)
            s.rows[row].phase = .finished(result, seconds: elapsed)
            return "done      " + TextWidth.pad(current.file.name, to: nameWidth(s)) + "  "
                + Self.describe(result, seconds: elapsed)
        }
        if !console.isTerminal { console.line(line) }
    }

    /// The download of `row` failed.
    func failed(_ row: Int, with error: any Error) {
        let line = state.withLock { s -> String in
            s.rows[row].phase = .failed("\(error)")
            return "fail      " + TextWidth.pad(s.rows[row].file.name, to: nameWidth(s)) + "  \(error)"
        }
        if !console.isTerminal { console.line(line) }
    }

    /// The download of `row` was canceled (Ctrl-C).
    func canceled(_ row: Int) {
        state.withLock { s in
            if let handle = s.rows[row].handle { s.rows[row].progress = handle.progress }
            s.rows[row].phase = .canceled
        }
    }

    /// Starts redrawing.
    func start() {
        state.withLock { s in
            s.startedAt = .now
            s.lastProgressLine = .now
            s.isRunning = true
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now(), repeating: .milliseconds(100), leeway: .milliseconds(10))
            timer.setEventHandler { [weak self] in self?.tick() }
            timer.resume()
            s.timer = timer
        }
    }

    /// Stops redrawing, leaves the final frame on screen and gives the cursor back. Call once every job
    /// ended.
    func stop() {
        queue.sync {
            let final = state.withLock { s -> [String] in
                s.timer?.cancel()
                s.timer = nil
                s.isRunning = false
                return console.isTerminal ? frame(s) : []
            }
            if console.isTerminal { screen.close(keeping: final) }
        }
    }

    /// How each download ended, in the order of the files.
    func outcomes() -> [DownloadOutcome] {
        state.withLock { s in
            s.rows.map { row in
                switch row.phase {
                case .finished(let result, let seconds):
                    DownloadOutcome(file: row.file, ending: .finished(result), seconds: seconds)
                case .failed(let reason):
                    DownloadOutcome(file: row.file, ending: .failed(reason), seconds: 0)
                case .queued, .started, .canceled:
                    DownloadOutcome(file: row.file, ending: .canceled, seconds: 0)
                }
            }
        }
    }

    // MARK: - Drawing (on `queue`)

    private func tick() {
        let (lines, plain) = state.withLock { s -> ([String]?, String?) in
            guard s.isRunning else { return (nil, nil) }
            for index in s.rows.indices {
                if case .queued = s.rows[index].phase, s.rows[index].handle?.state == .executing {
                    s.rows[index].phase = .started(at: .now)
                }
            }
            if console.isTerminal { return (frame(s), nil) }
            // Plain output: an overall line about once a second, while something is running.
            guard seconds(from: s.lastProgressLine) >= 1, s.rows.contains(where: \.isActive) else { return (nil, nil) }
            s.lastProgressLine = .now
            return (nil, "progress  " + overallLine(s))
        }
        if let lines { screen.draw(lines) }
        if let plain { console.line(plain) }
    }

    /// The rows and the overall line, fitted to the terminal's width.
    private func frame(_ s: State) -> [String] {
        let width = max(40, min(screen.columns - 1, 110))
        let nameWidth = nameWidth(s)
        return s.rows.map { line(for: $0, nameWidth: nameWidth, width: width) }
            + [TextWidth.fit("  " + overallLine(s), to: width)]
    }

    /// `  photos-2024.tar   [##########>         ]   52%  3.1 MiB of 6.0 MiB     3.0 MiB/s`
    private func line(for row: Row, nameWidth: Int, width: Int) -> String {
        let status: String
        var fraction = row.progress.fraction ?? 0
        switch row.phase {
        case .queued:
            status = "queued"
        case .started:
            if row.firstByteAt == nil {
                status = "waiting for a transfer slot"
            } else {
                // Bytes, length, speed and percentage from one snapshot, so the figures agree.
                let progress = row.progress
                let percent = String(Int((fraction * 100).rounded(.down))) + "%"
                let bytes = ByteFormatting.bytes(progress.bytes) + " of " + ByteFormatting.bytes(row.file.size)
                status = TextWidth.padLeft(percent, to: 4) + "  " + TextWidth.pad(bytes, to: 20)
                    + TextWidth.padLeft(ByteFormatting.rate(progress.bytesPerSecond), to: 11)
            }
        case .finished(let result, let seconds):
            fraction = 1
            status = "done  " + Self.describe(result, seconds: seconds)
        case .failed(let reason):
            status = "FAILED  " + reason
        case .canceled:
            status = "canceled at " + ByteFormatting.bytes(row.progress.bytes) + " (the .part file stays, to resume)"
        }
        let name = "  " + TextWidth.pad(row.file.name, to: nameWidth) + "  "
        // Room for the status after the bar; on a narrow terminal the bar shrinks, then goes.
        let barWidth = min(24, width - TextWidth.of(name) - 4 - 46)
        guard barWidth >= 8 else { return TextWidth.fit(name + status, to: width) }
        return TextWidth.fit(name + ProgressBar.text(fraction, width: barWidth) + "  " + status, to: width)
    }

    /// `3/8 done   18.2 MiB of 36.5 MiB   9.8 MiB/s   elapsed 0:02`
    private func overallLine(_ s: State) -> String {
        var done = 0
        var bytes: Int64 = 0
        var speed = 0.0
        for row in s.rows {
            if case .finished(let result, _) = row.phase {
                done += 1
                bytes += result.bytes
            } else {
                bytes += row.progress.bytes
                if row.isActive { speed += row.progress.bytesPerSecond }
            }
        }
        let total = s.rows.reduce(Int64(0)) { $0 + $1.file.size }
        let elapsed = seconds(from: s.startedAt)
        // While files are running: their current speed; at the end: the average.
        let rate = s.rows.contains(where: \.isActive)
            ? ByteFormatting.rate(speed) : "average " + ByteFormatting.rate(elapsed > 0 ? Double(bytes) / elapsed : 0)
        return "\(done)/\(s.rows.count) done   \(ByteFormatting.bytes(bytes)) of \(ByteFormatting.bytes(total))   "
            + "\(rate)   elapsed \(ByteFormatting.duration(elapsed, roundingUp: false))"
    }

    /// `6.0 MiB in 2.01 s, 3.0 MiB/s, sha-256 ok` (the job checked the digest before the rename).
    static func describe(_ result: DownloadResult, seconds: Double) -> String {
        let rate = seconds > 0 ? ByteFormatting.rate(Double(result.bytesReceived) / seconds) : "-"
        let verified = result.sha256 != nil ? ", sha-256 ok" : ""
        return "\(ByteFormatting.bytes(result.bytes)) in \(ByteFormatting.elapsed(seconds)), \(rate)\(verified)"
    }

    private func nameWidth(_ s: State) -> Int {
        s.rows.map { TextWidth.of($0.file.name) }.max() ?? 0
    }
}
