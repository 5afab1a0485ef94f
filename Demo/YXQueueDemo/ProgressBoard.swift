import Dispatch
import Foundation
import Synchronization
import YXDownload
import YXQueue

/// The live list of downloads: one row per file, fed by the jobs' delegate callbacks and redrawn ten
/// times a second.
///
/// On a terminal every row stays on screen and is redrawn in place: the cursor goes back up over the
/// previous frame and each line is cleared and rewritten, all in one write. Elsewhere (a pipe, a file)
/// the board prints one line per finished or failed file and an overall progress line about once a
/// second.
///
/// The board is the `JobDelegate` of every download (``watch(_:)``). The jobs are created with
/// ``queue`` as their `callbackQueue` and the redraw timer fires on it too, so callbacks and redraws
/// arrive one at a time, in order. The state sits behind a `Mutex` all the same: that is what makes the
/// class `Sendable`, as `JobDelegate` requires, with no `@unchecked`.
final class ProgressBoard: JobDelegate {
    /// Give this to the downloads as their `callbackQueue`.
    let queue = DispatchQueue(label: "YXQueueDemo.ProgressBoard")

    private let terminal: Terminal
    private let state: Mutex<State>

    /// Everything that changes, behind ``state``.
    private struct State {
        var rows: [Row]
        var startedAt = ContinuousClock.now
        /// The lengths of the lines of the last frame on screen (the cursor sits just below them).
        var drawnLines: [Int] = []
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
        var job: DownloadJob?
        var phase = Phase.queued
        /// The job's overall progress, from `job(_:didUpdateProgress:)`.
        var fraction = 0.0
        /// When the first byte arrived (the first progress callback).
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

    /// Where a download is, as the delegate callbacks told.
    private enum Phase {
        /// Not started yet.
        case queued
        /// Its first operation ran (the probe); bytes may not flow yet.
        case started(at: ContinuousClock.Instant)
        case finished(DownloadResult, seconds: Double)
        case failed(String)
        case canceled
    }

    /// Creates a board with a row per file, in this order.
    init(files: [DemoFile], terminal: Terminal) {
        self.terminal = terminal
        self.state = Mutex(State(rows: files.map { Row(file: $0) }))
    }

    /// Shows `job` in the row of its file (the job's `tag` is the row's index) and becomes its delegate.
    func watch(_ job: DownloadJob) {
        state.withLock { $0.rows[job.tag].job = job }
        job.addDelegate(self)  // held weakly: whoever made the board keeps it alive
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

    /// Stops redrawing, draws the final frame and gives the cursor back. Call once every job ended.
    func stop() {
        queue.sync {
            let text = state.withLock { s -> String in
                s.timer?.cancel()
                s.timer = nil
                s.isRunning = false
                return terminal.isInteractive ? frame(&s) + "\u{1B}[?25h" : ""
            }
            terminal.write(text)
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

    // MARK: - JobDelegate (on `queue`, one callback at a time per job)

    func jobDidStart(_ job: Job) {
        state.withLock { $0.rows[job.tag].phase = .started(at: .now) }
    }

    func job(_ job: Job, didUpdateProgress progress: Double) {
        state.withLock { s in
            s.rows[job.tag].fraction = progress
            if s.rows[job.tag].firstByteAt == nil { s.rows[job.tag].firstByteAt = .now }
        }
    }

    func job(_ job: Job, didFinishWith result: (any Sendable)?) {
        guard let result = result as? DownloadResult else { return }
        let line = state.withLock { s -> String in
            let row = s.rows[job.tag]
            let seconds = ByteText.seconds(from: row.firstByteAt ?? row.startedAt ?? s.startedAt)
            s.rows[job.tag].phase = .finished(result, seconds: seconds)
            s.rows[job.tag].fraction = 1
            return "done      \(pad(row.file.name, to: nameWidth(s)))  \(Self.describe(result, seconds: seconds))"
        }
        if !terminal.isInteractive { terminal.line(line) }
    }

    func job(_ job: Job, didFailWith error: any Error) {
        let line = state.withLock { s -> String in
            s.rows[job.tag].phase = .failed("\(error)")
            return "fail      \(pad(s.rows[job.tag].file.name, to: nameWidth(s)))  \(error)"
        }
        if !terminal.isInteractive { terminal.line(line) }
    }

    func jobDidCancel(_ job: Job) {
        state.withLock { $0.rows[job.tag].phase = .canceled }
    }

    // MARK: - Drawing (on `queue`)

    private func tick() {
        let text = state.withLock { s -> String in
            guard s.isRunning else { return "" }
            if terminal.isInteractive { return frame(&s) }
            // Plain output: an overall line about once a second, while something is running.
            guard ByteText.seconds(from: s.lastProgressLine) >= 1, s.rows.contains(where: \.isActive) else { return "" }
            s.lastProgressLine = .now
            return "progress  " + overallLine(s) + "\n"
        }
        if !text.isEmpty { terminal.write(text) }
    }

    /// The escape codes and lines that replace the previous frame.
    private func frame(_ s: inout State) -> String {
        let columns = terminal.columns
        let width = max(40, min(columns - 1, 110))
        let nameWidth = nameWidth(s)
        let lines = s.rows.map { line(for: $0, nameWidth: nameWidth, width: width) }
            + [cut("  " + overallLine(s), to: width)]
        // Back up over the previous frame. Each of its lines was one row when it was drawn; if the
        // window got narrower since, the terminal may have wrapped it onto more.
        let rows = s.drawnLines.reduce(0) { $0 + max(1, ($1 + columns - 1) / max(1, columns)) }
        var text = rows == 0 ? "\u{1B}[?25l" : "\r\u{1B}[\(rows)A"  // the first frame hides the cursor
        // Clear and rewrite line by line (clearing the whole rest of the screen from its top-left corner
        // would make some terminals, tmux among them, copy the screen into the scrollback each time).
        for line in lines { text += "\u{1B}[2K" + line + "\n" }
        if rows > lines.count { text += "\u{1B}[J" }  // rows left over from a wrapped frame
        s.drawnLines = lines.map(\.count)
        return text
    }

    /// `  photos-2024.tar   [==========>         ]   52%  3.1 MiB of 6.0 MiB     3.0 MiB/s`
    private func line(for row: Row, nameWidth: Int, width: Int) -> String {
        let status: String
        var fraction = row.fraction
        switch row.phase {
        case .queued:
            status = "queued"
        case .started:
            if row.firstByteAt == nil {
                status = "waiting for a transfer slot"
            } else {
                // Bytes, length and speed from the job's live snapshot; the percentage from the same
                // snapshot, so the figures agree (the delegate's throttled value can lag a little).
                let progress = row.job?.progressSnapshot
                fraction = progress?.fraction ?? fraction
                let percent = String(Int((fraction * 100).rounded(.down))) + "%"
                let bytes = ByteText.size(progress?.bytes ?? 0) + " of " + ByteText.size(row.file.size)
                status = pad(percent, to: 4, left: true) + "  " + pad(bytes, to: 20)
                    + pad(ByteText.rate(progress?.bytesPerSecond ?? 0), to: 11, left: true)
            }
        case .finished(let result, let seconds):
            fraction = 1
            status = "done  " + Self.describe(result, seconds: seconds)
        case .failed(let reason):
            status = "FAILED  " + reason
        case .canceled:
            let progress = row.job?.progressSnapshot
            fraction = progress?.fraction ?? fraction
            status = "canceled at " + ByteText.size(progress?.bytes ?? 0) + " (the .part file stays, to resume)"
        }
        let name = "  " + pad(row.file.name, to: nameWidth) + "  "
        // Room for the status after the bar; on a narrow terminal the bar shrinks, then goes.
        let barWidth = min(24, width - name.count - 4 - 46)
        guard barWidth >= 8 else { return cut(name + status, to: width) }
        return cut(name + Self.bar(fraction, width: barWidth) + "  " + status, to: width)
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
            } else if let progress = row.job?.progressSnapshot {
                bytes += progress.bytes
                if row.isActive { speed += progress.bytesPerSecond }
            }
        }
        let total = s.rows.reduce(Int64(0)) { $0 + $1.file.size }
        let elapsed = ByteText.seconds(from: s.startedAt)
        // While files are running: their current speed; at the end: the average.
        let rate = s.rows.contains(where: \.isActive)
            ? ByteText.rate(speed) : "average " + ByteText.rate(elapsed > 0 ? Double(bytes) / elapsed : 0)
        return "\(done)/\(s.rows.count) done   \(ByteText.size(bytes)) of \(ByteText.size(total))   "
            + "\(rate)   elapsed \(ByteText.clock(elapsed))"
    }

    /// `[=========>          ]`, `width` columns inside the brackets.
    private static func bar(_ fraction: Double, width: Int) -> String {
        let filled = min(width, Int((min(1, max(0, fraction)) * Double(width)).rounded(.down)))
        let head = filled < width && filled > 0 ? ">" : ""
        let body = String(repeating: "=", count: filled - head.count) + head
        return "[" + body + String(repeating: " ", count: width - body.count) + "]"
    }

    /// `6.0 MiB in 2.01 s, 3.0 MiB/s, sha-256 ok` (the job checked the digest before the rename).
    static func describe(_ result: DownloadResult, seconds: Double) -> String {
        let rate = seconds > 0 ? ByteText.rate(Double(result.bytesReceived) / seconds) : "-"
        let verified = result.sha256 != nil ? ", sha-256 ok" : ""
        return "\(ByteText.size(result.bytes)) in \(ByteText.seconds(seconds)), \(rate)\(verified)"
    }

    private func nameWidth(_ s: State) -> Int {
        s.rows.map(\.file.name.count).max() ?? 0
    }

    /// Pads with spaces to `width` characters (on the left with `left`).
    private func pad(_ text: String, to width: Int, left: Bool = false) -> String {
        let padding = String(repeating: " ", count: max(0, width - text.count))
        return left ? padding + text : text + padding
    }

    /// Cuts a line to `width` characters, so it never wraps (a wrapped line would break the redraw).
    private func cut(_ text: String, to width: Int) -> String {
        text.count <= width ? text : String(text.prefix(width - 1)) + "…"
    }
}
