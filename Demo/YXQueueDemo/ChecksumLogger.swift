import Synchronization
import YXQueue
import YXTerminal

/// The delegate form: a `JobDelegate` that receives the start, progress, finish and fail callbacks of
/// the checksum jobs it is added to, and prints one line per job when it ends, with the callbacks it got.
///
/// A job holds its delegates weakly: keep the logger alive until the jobs ended.
final class ChecksumLogger: JobDelegate {
    private let terminal: Console
    private let state = Mutex(State())

    /// What the callbacks collected, behind ``state``.
    private struct State {
        /// The jobs watched: their typed handle and file name.
        var watched: [ObjectIdentifier: (handle: JobHandle<ChecksumReport>, name: String)] = [:]
        /// The callbacks received so far, per job tag.
        var callbacks: [Int: [String]] = [:]
        var reports: [ChecksumReport] = []
        var failures: [String] = []
    }

    init(terminal: Console) {
        self.terminal = terminal
    }

    /// Adds this logger as the delegate of `handle`'s job.
    func watch(_ handle: JobHandle<ChecksumReport>, name: String) {
        state.withLock { $0.watched[ObjectIdentifier(handle.job)] = (handle, name) }
        handle.job.addDelegate(self)
    }

    private func watched(_ job: Job) -> (handle: JobHandle<ChecksumReport>, name: String)? {
        state.withLock { $0.watched[ObjectIdentifier(job)] }
    }

    /// The reports of the jobs that finished.
    var reports: [ChecksumReport] { state.withLock { $0.reports } }
    /// One line per job that failed or was canceled.
    var failures: [String] { state.withLock { $0.failures } }

    func jobDidStart(_ job: Job) {
        record(job, "start")
    }

    func job(_ job: Job, didUpdateProgress progress: Double) {
        record(job, "progress")
    }

    func job(_ job: Job, didFinishWith result: (any Sendable)?) {
        guard let report = watched(job)?.handle.output else { return }  // the typed output, no cast
        let callbacks = record(job, "finish")
        state.withLock { $0.reports.append(report) }
        terminal.line(Self.line(form: "delegate", name: report.file.lastPathComponent, report.digest, callbacks))
    }

    func job(_ job: Job, didFailWith error: any Error) {
        let callbacks = record(job, "fail")
        let name = watched(job)?.name ?? "\(job)"
        state.withLock { $0.failures.append("\(name): \(error)") }
        terminal.line(Self.line(form: "delegate", name: name, "FAILED", "\(callbacks): \(error)"))
    }

    func jobDidCancel(_ job: Job) {
        let name = watched(job)?.name ?? "\(job)"
        state.withLock { $0.failures.append("\(name): canceled") }
    }

    /// Notes a callback; returns the callbacks of the job so far, e.g. `start, 3 × progress, finish`.
    @discardableResult
    private func record(_ job: Job, _ callback: String) -> String {
        let names = state.withLock { s in
            s.callbacks[job.tag, default: []].append(callback)
            return s.callbacks[job.tag] ?? []
        }
        let progressCount = names.filter { $0 == "progress" }.count
        var shown = names.filter { $0 != "progress" }
        if progressCount > 0 { shown.insert("\(progressCount) × progress", at: min(1, shown.count)) }
        return shown.joined(separator: ", ")
    }

    /// `  delegate  photos-2024.tar   f4585470424da59f  start, 2 × progress, finish`
    static func line(form: String, name: String, _ digest: String, _ note: String) -> String {
        func pad(_ text: String, _ width: Int) -> String {
            text + String(repeating: " ", count: max(0, width - text.count))
        }
        return "  " + pad(form, 8) + "  " + pad(name, 16) + "  " + pad(digest, 16) + "  " + note
    }
}
