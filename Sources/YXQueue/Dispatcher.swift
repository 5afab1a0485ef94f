import Dispatch
import Foundation

/// Runs jobs: owns one `OperationQueue` per operation type and the jobs that are under way.
///
/// Use the process-wide ``shared`` dispatcher, or create independent ones (for tests, or to isolate one
/// part of a program: two dispatchers share no queue and no state).
///
/// ```swift
/// let dispatcher = Dispatcher(name: "thumbnails")
/// for path in paths { dispatcher.add(ThumbnailJob(path: path)) }
/// await dispatcher.waitForAllJobs()
/// ```
///
/// - Note: Every method is safe to call from any thread. ``waitUntilAllJobsAreFinished()`` blocks, so do
///   not call it from a job's callback queue.
public final class Dispatcher: Sendable {
    /// The process-wide dispatcher.
    public static let shared = Dispatcher(name: "YXQueue.shared")

    /// A name for diagnostics; the queues are named after it.
    public let name: String

    private let state = Locked(State())
    /// Entered once per active attempt, left after the attempt's terminal callbacks were delivered.
    private let activity = DispatchGroup()

    /// Creates an independent dispatcher.
    public init(name: String = "YXQueue") {
        self.name = name
    }

    // MARK: - Jobs

    /// Starts a job on this dispatcher; the same as `job.start(on: self)`.
    ///
    /// - Returns: Whether a new attempt began (see ``Job/start(on:)``).
    @discardableResult
    public func add(_ job: Job) -> Bool {
        job.start(on: self)
    }

    /// Cancels a job; the same as `job.cancel()`.
    public func cancel(_ job: Job) {
        job.cancel()
    }

    /// Drops a job for good; the same as `job.drop()`.
    public func drop(_ job: Job) {
        job.drop()
    }

    /// Cancels every active job.
    public func cancelAll() {
        for job in activeJobs { job.cancel() }
    }

    /// Holds every operation that has not started yet (existing and future queues are suspended);
    /// operations already executing go on.
    public func pauseAll() {
        let queues = state.withLock { s in
            s.isPaused = true
            return Array(s.queues.values)
        }
        for queue in queues { queue.isSuspended = true }
    }

    /// Releases what ``pauseAll()`` held.
    public func resumeAll() {
        let queues = state.withLock { s in
            s.isPaused = false
            return Array(s.queues.values)
        }
        for queue in queues { queue.isSuspended = false }
    }

    /// Whether ``pauseAll()`` is in force.
    public var isPaused: Bool { state.withLock { $0.isPaused } }

    /// The jobs that are under way, in no particular order.
    public var activeJobs: [Job] { state.withLock { s in s.active.values.map(\.job) } }

    /// The manager of a job that is active on this dispatcher (the original's "find the JobManager").
    public func manager(for job: Job) -> JobManager? {
        let isActiveHere = state.withLock { $0.active[ObjectIdentifier(job)] != nil }
        return isActiveHere ? job.manager : nil
    }

    /// Blocks until no job is active and every terminal callback was delivered.
    ///
    /// - Warning: Do not call from a job's callback queue (it would wait for itself).
    public func waitUntilAllJobsAreFinished() {
        activity.wait()
    }

    /// Waits, without blocking a thread, until no job is active and every terminal callback was
    /// delivered.
    public func waitForAllJobs() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            activity.notify(queue: .global()) { continuation.resume() }
        }
    }

    // MARK: - Queues

    /// The queue of an operation type, created on first use with the model's limit.
    public func queue(for model: OperationModel) -> OperationQueue {
        if let existing = state.withLock({ $0.queues[model.type] }) { return existing }
        let queue = OperationQueue()
        queue.name = "\(name).\(model.type)"
        queue.maxConcurrentOperationCount = model.maxConcurrentOperationCount
        return state.withLock { s in
            if let existing = s.queues[model.type] { return existing }
            queue.isSuspended = s.isPaused
            s.queues[model.type] = queue
            return queue
        }
    }

    /// The operation types that have a queue.
    public var operationTypes: [String] { state.withLock { Array($0.queues.keys) } }

    func enqueue(_ operation: QueueOperation) {
        queue(for: operation.model).addOperation(operation)
    }

    // MARK: - Bookkeeping (called by Job)

    /// Called with the job's lock held: never calls back into the job.
    func register(_ job: Job, attempt: Int) {
        activity.enter()
        state.withLock { s in
            let id = ObjectIdentifier(job)
            if s.active[id] != nil {
                // The previous attempt's unregister is still queued behind its terminal callback.
                s.active[id]?.attempt = attempt
                s.active[id]?.count += 1
            } else {
                s.active[id] = Entry(job: job, attempt: attempt, count: 1)
            }
        }
    }

    func unregister(_ job: Job, attempt: Int) {
        state.withLock { s in
            let id = ObjectIdentifier(job)
            guard var entry = s.active[id] else { return }
            entry.count -= 1
            s.active[id] = entry.count == 0 ? nil : entry
        }
        activity.leave()
    }

    private struct Entry {
        let job: Job
        var attempt: Int
        var count: Int
    }

    private struct State {
        var queues: [String: OperationQueue] = [:]
        var active: [ObjectIdentifier: Entry] = [:]
        var isPaused = false
    }
}
