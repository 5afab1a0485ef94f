import Dispatch
import Foundation

/// The model of a piece of background work: its parameters, its type, and which ``JobManager`` and
/// ``QueueOperation`` types carry it out.
///
/// Subclass `Job` for your own work. The simplest job names one operation type; its default manager
/// builds one operation of that type:
///
/// ```swift
/// final class HashJob: Job {
///     let path: String
///     init(path: String) { self.path = path; super.init() }
///     override class var operationType: QueueOperation.Type { HashOperation.self }
///     override var operationModel: OperationModel { OperationModel(type: "hash", maxConcurrentOperationCount: 2) }
/// }
///
/// let job = HashJob(path: "/tmp/big.iso")
/// let token = job.onFinish { job, result in print(result ?? "none") }
/// job.start()                                  // or: let digest = try await job.run()
/// ```
///
/// A job that needs several operations (with dependencies between them) names a ``JobManager``
/// subclass in ``managerType`` that builds them.
///
/// - Important: All of a job's callbacks (delegates, closure observers, async streams) are delivered in
///   order on a private serial queue that targets ``callbackQueue``. Every method of `Job` is safe to call
///   from any thread.
open class Job: @unchecked Sendable {
    /// A number of your choosing that tells jobs apart (the original's `tag`).
    public let tag: Int
    /// When the job was created.
    public let createdAt: Date
    /// The queue the job's callbacks are delivered on (the original's `resultInMainThread`; pass
    /// `.main` only in a program that runs the main queue).
    public let callbackQueue: DispatchQueue

    let core: Locked<Core>

    /// Creates a job.
    ///
    /// - Parameters:
    ///   - tag: A number of your choosing.
    ///   - callbackQueue: Where callbacks are delivered; by default a global queue (callbacks of one job
    ///     never overlap even so).
    public init(tag: Int = 0, callbackQueue: DispatchQueue = .global(qos: .utility)) {
        self.tag = tag
        self.createdAt = Date()
        self.callbackQueue = callbackQueue
        self.core = Locked(Core())
    }

    // MARK: - What serves the job (override in subclasses)

    /// The ``JobManager`` type that turns this job into operations (default: one operation of
    /// ``operationType``).
    open class var managerType: JobManager.Type { JobManager.self }

    /// The ``QueueOperation`` type the default manager instantiates.
    open class var operationType: QueueOperation.Type { QueueOperation.self }

    /// A name for the kind of job (default: the class name).
    open var jobType: String { String(describing: type(of: self)) }

    /// The model of the default manager's operation: its queue and that queue's limit.
    open var operationModel: OperationModel { OperationModel(type: jobType) }

    // MARK: - Observable state

    /// The current state.
    public var state: JobState { core.withLock { $0.state } }
    /// The overall progress of the current (or last) attempt, from 0 to 1.
    public var progress: Double { core.withLock { $0.progress } }
    /// The result, once the job finished successfully.
    public var result: (any Sendable)? { core.withLock { $0.result } }
    /// The error, once the job failed.
    public var error: (any Error)? { core.withLock { $0.error } }
    /// How many attempts were begun (1 after the first start, 2 after a restart, …).
    public var attempt: Int { core.withLock { $0.attempt } }
    /// Whether an attempt is under way (accepted by a dispatcher and not yet in a terminal state).
    public var isActive: Bool { core.withLock { $0.isActive } }
    /// The manager that runs this job, once the job was started.
    public var manager: JobManager? { core.withLock { $0.manager } }
    /// The dispatcher of the current or last attempt.
    public var dispatcher: Dispatcher? { core.withLock { $0.dispatcher } }

    // MARK: - Control

    /// Hands the job to a dispatcher (the original's `doJob`).
    ///
    /// Starting a job that is already active, finished successfully, or dropped does nothing; a
    /// canceled or failed job begins a new attempt (a restart).
    ///
    /// - Parameter dispatcher: The dispatcher that runs it (default ``Dispatcher/shared``).
    /// - Returns: Whether a new attempt began.
    @discardableResult
    public func start(on dispatcher: Dispatcher = .shared) -> Bool {
        let manager = ensureManager()
        let attempt: Int? = core.withLock { s in
            guard !s.isActive else { return nil }
            guard s.state == .ready || s.state.isRestartable else { return nil }
            s.state = .ready
            s.attempt += 1
            s.isActive = true
            s.dispatcher = dispatcher
            s.result = nil
            s.error = nil
            s.progress = 0
            s.deliveredProgress = -1
            s.lastProgressDelivery = 0
            s.progressFlushScheduled = false
            dispatcher.register(self, attempt: s.attempt)
            return s.attempt
        }
        guard let attempt else { return false }
        manager.begin(attempt: attempt, dispatcher: dispatcher)
        return true
    }

    /// Begins a new attempt of a canceled or failed job, on the dispatcher of its last attempt.
    ///
    /// A job that never started, is active, finished successfully or was dropped is left alone.
    ///
    /// - Returns: Whether a new attempt began.
    @discardableResult
    public func restart() -> Bool {
        let last: Dispatcher? = core.withLock { s in
            s.state.isRestartable && !s.isActive ? s.dispatcher : nil
        }
        guard let last else { return false }
        return start(on: last)
    }

    /// Cancels the job (the original's `doCancel`).
    ///
    /// Its operations are canceled (an executing one is told at once through
    /// ``QueueOperation/operationDidCancel()``), operations that were waiting never run, and delegates get
    /// one ``JobDelegate/jobDidCancel(_:)``. Safe at any moment, from any thread, any number of times;
    /// canceling a job that is not active changes nothing.
    public func cancel() {
        end(to: .canceled, event: .canceled, attempt: nil)
    }

    /// Cancels the job if it is active, and removes it for good: it cannot be restarted.
    public func drop() {
        let wasActive = core.withLock { s -> Bool in
            if s.isActive { return true }
            if s.state.canTransition(to: .dropped) { s.state = .dropped }
            return false
        }
        if wasActive { end(to: .dropped, event: .canceled, attempt: nil) }
    }

    // MARK: - Delegates

    /// Adds a delegate, held weakly. Adding the same delegate twice has no effect.
    public func addDelegate(_ delegate: any JobDelegate) {
        core.withLock { s in
            s.delegates.removeAll { $0.value == nil }
            if !s.delegates.contains(where: { $0.value === delegate }) {
                s.delegates.append(WeakDelegate(value: delegate))
            }
        }
    }

    /// Removes a delegate; it receives no further callback that is not already being delivered.
    public func removeDelegate(_ delegate: any JobDelegate) {
        core.withLock { s in s.delegates.removeAll { $0.value == nil || $0.value === delegate } }
    }

    // MARK: - Internals used by JobManager and Dispatcher

    private func ensureManager() -> JobManager {
        if let existing = core.withLock({ $0.manager }) { return existing }
        let made = Self.managerType.init(job: self)
        return core.withLock { s in
            if let existing = s.manager { return existing }
            s.manager = made
            return made
        }
    }

    /// The first operation of `attempt` is about to execute.
    func markExecuting(attempt: Int) {
        let wake = core.withLock { s -> DispatchQueue? in
            guard s.isActive, s.attempt == attempt, s.state == .ready else { return nil }
            s.state = .executing
            return post(.event(.started, attempt: attempt), in: &s)
        }
        if let wake { scheduleDrain(on: wake) }
    }

    /// Whether operations of `attempt` may still run.
    func isCurrent(attempt: Int) -> Bool {
        core.withLock { s in s.isActive && s.attempt == attempt && !s.state.isTerminal }
    }

    /// Records the aggregated progress of `attempt`; clamped, monotonic, throttled.
    func updateProgress(_ value: Double, attempt: Int) {
        let wake = core.withLock { s -> DispatchQueue? in
            guard s.isActive, s.attempt == attempt, s.state == .executing else { return nil }
            let clamped = value.isNaN ? 0 : min(1, max(0, value))
            guard clamped > s.progress else { return nil }
            s.progress = clamped
            let now = DispatchTime.now().uptimeNanoseconds
            let due = s.lastProgressDelivery &+ Job.progressInterval
            if s.lastProgressDelivery == 0 || now >= due {
                s.lastProgressDelivery = now
                s.deliveredProgress = clamped
                return post(.event(.progress(clamped), attempt: attempt), in: &s)
            } else if !s.progressFlushScheduled {
                s.progressFlushScheduled = true
                DispatchQueue.global().asyncAfter(deadline: DispatchTime(uptimeNanoseconds: due)) { [self] in
                    flushProgress(attempt: attempt)
                }
            }
            return nil
        }
        if let wake { scheduleDrain(on: wake) }
    }

    /// Minimum time between two progress callbacks, in nanoseconds.
    static let progressInterval: UInt64 = 100_000_000

    /// The trailing edge of the throttle: queues the latest value, if it was not delivered yet.
    ///
    /// The value is chosen under the lock and queued behind any event already queued, so it can never
    /// overtake an older one.
    private func flushProgress(attempt: Int) {
        let wake = core.withLock { s -> DispatchQueue? in
            s.progressFlushScheduled = false
            guard s.isActive, s.attempt == attempt, s.state == .executing, s.progress > s.deliveredProgress else {
                return nil
            }
            s.deliveredProgress = s.progress
            s.lastProgressDelivery = DispatchTime.now().uptimeNanoseconds
            return post(.event(.progress(s.progress), attempt: attempt), in: &s)
        }
        if let wake { scheduleDrain(on: wake) }
    }

    func finish(result: (any Sendable)?, attempt: Int) {
        end(to: .finishedSuccess, event: .finished(result), attempt: attempt, result: result)
    }

    func fail(_ error: any Error, attempt: Int) {
        end(to: .finishedFailed, event: .failed(error), attempt: attempt, error: error)
    }

    func cancelFromOperation(attempt: Int) {
        end(to: .canceled, event: .canceled, attempt: attempt)
    }

    /// The one path into a terminal state: guarded so that each attempt ends exactly once.
    private func end(
        to terminal: JobState,
        event: JobEvent,
        attempt expected: Int?,
        result: (any Sendable)? = nil,
        error: (any Error)? = nil
    ) {
        typealias Ended = (manager: JobManager?, attempt: Int, unregisterNow: Dispatcher?, wake: DispatchQueue?)
        let ended: Ended? = core.withLock { s in
            guard s.isActive, expected == nil || expected == s.attempt,
                s.state.canTransition(to: terminal)
            else { return nil }
            s.state = terminal
            s.isActive = false
            s.result = result
            s.error = error
            let attempt = s.attempt
            var wake: DispatchQueue?
            if terminal == .finishedSuccess {
                s.progress = 1
                if s.deliveredProgress < 1 {
                    s.deliveredProgress = 1
                    wake = post(.event(.progress(1), attempt: attempt), in: &s)
                }
            }
            wake = post(.event(event, attempt: attempt), in: &s) ?? wake
            var unregisterNow: Dispatcher?
            if let dispatcher = s.dispatcher {
                if s.eventQueue != nil {
                    // After the terminal callbacks, so that waiting for the dispatcher includes them.
                    wake = post(.unregister(dispatcher, attempt: attempt), in: &s) ?? wake
                } else {
                    unregisterNow = dispatcher
                }
            }
            return (s.manager, attempt, unregisterNow, wake)
        }
        guard let ended else { return }
        if let wake = ended.wake { scheduleDrain(on: wake) }
        ended.unregisterNow?.unregister(self, attempt: ended.attempt)
        ended.manager?.attemptDidEnd(ended.attempt)
    }

    // MARK: - Event delivery

    /// What the event queue has to do, in order: deliver an event, or (after a terminal event) tell the
    /// dispatcher the attempt is over.
    enum Mail {
        case event(JobEvent, attempt: Int)
        case unregister(Dispatcher, attempt: Int)
    }

    /// Puts `mail` in the job's mailbox. Called with `core` locked (`s` is the locked state), so mail is
    /// queued in the order of the transitions.
    ///
    /// - Returns: the event queue when a drain must be scheduled on it; the caller does that after
    ///   unlocking (`scheduleDrain(on:)`), so no thread waits for the lock while another wakes a worker.
    ///   Mail that arrives while a drain is scheduled or running is delivered by that drain: a job's
    ///   start, progress and end often cost one hop to the callback queue, not three.
    ///
    /// The serial event queue (which targets ``callbackQueue``) is created when the first event finds a
    /// listener; with no delegate and no observer, events are dropped at once.
    private func post(_ mail: Mail, in s: inout Core) -> DispatchQueue? {
        if case .event = mail, s.delegates.isEmpty && s.observers.isEmpty { return nil }
        let queue: DispatchQueue
        if let existing = s.eventQueue {
            queue = existing
        } else {
            queue = DispatchQueue(label: "YXQueue.Job.events", target: callbackQueue)
            s.eventQueue = queue
        }
        s.mailbox.append(mail)
        if s.drainScheduled { return nil }
        s.drainScheduled = true
        return queue
    }

    private func scheduleDrain(on queue: DispatchQueue) {
        queue.async { [self] in drain(on: queue) }
    }

    /// Delivers the mailbox in order, one item at a time, until it is empty. Runs on the event queue.
    private func drain(on queue: DispatchQueue) {
        dispatchPrecondition(condition: .onQueue(queue))
        while true {
            // The listeners are read with each item, so one removed in a callback hears nothing more.
            let next: (Mail, [any JobDelegate], [Observer])? = core.withLock { s in
                guard !s.mailbox.isEmpty else {
                    s.drainScheduled = false
                    return nil
                }
                let mail = s.mailbox.removeFirst()
                guard case .event(_, let attempt) = mail else { return (mail, [], []) }
                s.delegates.removeAll { $0.value == nil }
                let observers = s.observers.filter { $0.attempt == nil || $0.attempt == attempt }.map(\.handler)
                return (mail, s.delegates.compactMap(\.value), observers)
            }
            guard let (mail, delegates, observers) = next else { return }
            switch mail {
            case .unregister(let dispatcher, let attempt):
                dispatcher.unregister(self, attempt: attempt)
            case .event(let event, _):
                deliver(event, to: delegates, observers)
            }
        }
    }

    private func deliver(_ event: JobEvent, to delegates: [any JobDelegate], _ observers: [Observer]) {
        for delegate in delegates {
            switch event {
            case .started: delegate.jobDidStart(self)
            case .progress(let value): delegate.job(self, didUpdateProgress: value)
            case .finished(let result): delegate.job(self, didFinishWith: result)
            case .failed(let error): delegate.job(self, didFailWith: error)
            case .canceled: delegate.jobDidCancel(self)
            }
        }
        for observer in observers {
            observer(self, event)
        }
    }

    /// Registers an observer of every event, or of the events of one attempt.
    func addObserver(attempt: Int? = nil, _ handler: @escaping Observer) -> UInt64 {
        core.withLock { s in s.addObserver(attempt: attempt, handler) }
    }

    typealias Observer = @Sendable (Job, JobEvent) -> Void

    func removeObserver(_ id: UInt64) {
        core.withLock { s in s.observers.removeAll { $0.id == id } }
    }

    /// Everything mutable about a job, behind one lock.
    struct Core {
        var state: JobState = .ready
        var attempt = 0
        var isActive = false
        var dispatcher: Dispatcher?
        var manager: JobManager?
        var result: (any Sendable)?
        var error: (any Error)?
        var progress: Double = 0
        var deliveredProgress: Double = -1
        var lastProgressDelivery: UInt64 = 0
        var progressFlushScheduled = false
        var delegates: [WeakDelegate] = []
        var observers: [(id: UInt64, attempt: Int?, handler: Observer)] = []
        var nextObserverID: UInt64 = 0
        /// Serial, targets the callback queue; every event goes through it, which gives order and
        /// non-overlap. Created on first use.
        var eventQueue: DispatchQueue?
        /// Mail for the event queue, in transition order (see `post(_:in:)`).
        var mailbox: [Mail] = []
        /// Whether a drain is scheduled or running on the event queue.
        var drainScheduled = false

        /// The attempt that is under way, or the one that will begin next.
        var currentOrNextAttempt: Int { isActive ? attempt : attempt + 1 }

        mutating func addObserver(attempt: Int?, _ handler: @escaping Observer) -> UInt64 {
            nextObserverID += 1
            observers.append((nextObserverID, attempt, handler))
            return nextObserverID
        }
    }
}

extension Job: CustomStringConvertible {
    /// `TYPE#TAG [STATE]`, with the state at the time of the call (not of the event being delivered).
    public var description: String { "\(jobType)#\(tag) [\(state)]" }
}
