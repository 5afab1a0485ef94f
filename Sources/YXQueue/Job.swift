import Dispatch
import Foundation

/// The model of a piece of background work: its parameters, its name, and which ``JobManager`` and
/// ``QueueOperation`` classes carry it out. This is the class layer of YXQueue, as in the original; most
/// programs define jobs as values instead (``JobDefinition``), which need no subclass.
///
/// Subclass `Job` for your own work. The simplest job names one operation class; its default manager
/// builds one operation of that class, on the job's ``queue``:
///
/// ```swift
/// final class HashJob: Job, @unchecked Sendable {   // Swift cannot check a class hierarchy
///     let path: String
///     init(path: String) { self.path = path; super.init() }
///     override class var operationClass: QueueOperation.Type { HashOperation.self }
///     override var queue: String { "hash" }
/// }
///
/// let job = HashJob(path: "/tmp/big.iso")
/// let token = job.onFinish { job, result in print(result ?? "none") }
/// job.start()                                  // or: let digest = try await job.run()
/// ```
///
/// A job that needs several operations (with dependencies between them) names a ``JobManager``
/// subclass in ``managerClass`` that builds them.
///
/// - Important: All of a job's callbacks (delegates, closure observers, async streams) are delivered in
///   order on ``callbackQueue``, one at a time. Every method of `Job` is safe to call from any thread.
open class Job: @unchecked Sendable {
    /// A number of your choosing that tells jobs apart (the original's `tag`).
    public let tag: Int
    /// When the job was created.
    public let createdAt: Date
    /// The queue the job's callbacks are delivered on (the original's `resultInMainThread`; pass
    /// `.main` only in a program that runs the main queue).
    public var callbackQueue: DispatchQueue { ownCallbackQueue ?? Job.defaultCallbackQueue }

    /// The callback queue when it is not ``defaultCallbackQueue``. A job that held the shared default
    /// itself retained it where it was made and released it where it was freed, often two threads: the
    /// default queue's reference count then moved between their cores with every job (issue #14: a
    /// third of the retains' cost on the adding thread of the no-op benchmark).
    private let ownCallbackQueue: DispatchQueue?
    /// How the job's work is tried again after a failure that may go away (default: never). A retry
    /// happens within the attempt: the job stays executing, holds no queue slot while it waits, and
    /// rebuilds its operations (``JobManager/makeOperations()``) when the wait is over.
    public var retryPolicy: RetryPolicy { limits?.retryPolicy ?? .never }
    /// The longest an attempt may run, waits for retries included; past it, its operations are canceled
    /// and the job fails with ``JobError/deadlineExceeded(_:)``. `nil`: no limit.
    public var deadline: Duration? { limits?.deadline }

    /// The retry policy and deadline of a job that has either; most jobs have neither, and keep one
    /// pointer instead of their 70 bytes (memory per queued job).
    private final class Limits: Sendable {
        let retryPolicy: RetryPolicy
        let deadline: Duration?
        init(retryPolicy: RetryPolicy, deadline: Duration?) {
            self.retryPolicy = retryPolicy
            self.deadline = deadline
        }
    }

    private let limits: Limits?

    /// The queue a job delivers its callbacks on unless it is given another: the global queue of
    /// utility quality of service. (One object for all jobs: `DispatchQueue.global(qos:)` makes a new
    /// one at each call.)
    public static let defaultCallbackQueue = DispatchQueue.global(qos: .utility)

    let core: StripedLocked<Core>

    /// The manager, once the job was first started. Read and written only with `core` locked (no run-time
    /// exclusivity check is needed, nor made). It lives in the job, not in `core`: the manager holds
    /// `core` (its graph is there), and `core` holding the manager would make a cycle that only a lock in
    /// the job's `deinit` could break, where dropping the job's last reference with `core` locked (an
    /// observer's removal, say) would wait for ever.
    @exclusivity(unchecked) private var lockedManager: JobManager?

    /// Creates a job.
    ///
    /// - Parameters:
    ///   - tag: A number of your choosing.
    ///   - callbackQueue: Where callbacks are delivered; by default a global queue (callbacks of one job
    ///     never overlap even so).
    ///   - retryPolicy: How failures are retried (default: never).
    ///   - deadline: The longest an attempt may run (default: no limit).
    public init(
        tag: Int = 0, callbackQueue: DispatchQueue = Job.defaultCallbackQueue, retryPolicy: RetryPolicy = .never,
        deadline: Duration? = nil
    ) {
        self.tag = tag
        self.createdAt = Date()
        self.ownCallbackQueue = callbackQueue === Job.defaultCallbackQueue ? nil : callbackQueue
        self.limits = retryPolicy == .never && deadline == nil ? nil : Limits(retryPolicy: retryPolicy, deadline: deadline)
        self.core = StripedLocked(Core())
    }

    // MARK: - What serves the job (override in subclasses)

    /// The ``JobManager`` class that turns this job into operations (default: one operation of
    /// ``Job/operationClass``).
    open class var managerClass: JobManager.Type { JobManager.self }

    /// What an attempt of a ``JobDefinition`` runs (``DefinitionJob`` says); nil for other jobs.
    func definitionWork() -> DefinitionWork? { nil }

    /// The ``QueueOperation`` class the default manager instantiates.
    open class var operationClass: QueueOperation.Type { QueueOperation.self }

    /// The name of this kind of job (default: the class name), used in logs, metrics and descriptions.
    open var name: String { TypeNames.name(of: type(of: self)) }

    /// The dispatcher queue of the default manager's operation (default: ``Job/name``).
    open var queue: String { name }

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
    public var manager: JobManager? { core.withLock { _ in lockedManager } }
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
        start(on: dispatcher, canceled: false)
    }

    /// Begins an attempt; with `canceled`, the attempt ends canceled before any of its work is built or
    /// run (a `run()` from a task that was already cancelled).
    @discardableResult
    func start(on dispatcher: Dispatcher, canceled: Bool) -> Bool {
        // The manager is made on the first start. YXQueue's own managers are made under the lock (their
        // initializer stores two references); a subclass's is made outside it (its initializer is the
        // subclass's code), which costs a second turn of the lock.
        let managerClass = Self.managerClass
        let ownClass: JobManager.Type? =
            managerClass == JobManager.self || managerClass == DefinitionManager.self ? managerClass : nil
        var made: JobManager?
        while true {
            let step = begin(on: dispatcher, manager: made, makingOwn: ownClass)
            switch step {
            case .refused:
                return false
            case .needsManager:
                made = managerClass.init(job: self)
            case .began(let attempt, let manager, let isFresh):
                if let metrics = dispatcher.instruments.jobStarted(self, attempt: attempt) {
                    core.withLock { s in if s.attempt == attempt { s.metrics = metrics } }
                }
                if canceled {
                    end(to: .canceled, attempt: attempt)
                } else {
                    // A manager made for this attempt has no earlier operations to wait for.
                    manager.begin(attempt: attempt, dispatcher: dispatcher, isFresh: isFresh)
                }
                return true
            }
        }
    }

    private enum BeginStep {
        case refused
        case needsManager
        /// `isFresh`: the manager was made for this attempt.
        case began(attempt: Int, manager: JobManager, isFresh: Bool)
    }

    /// Begins an attempt under the lock, if the job may begin one and has (or is given) its manager.
    ///
    /// - Parameter ownClass: The job's manager class when it is one of YXQueue's, whose initializer may
    ///   run under the lock.
    private func begin(on dispatcher: Dispatcher, manager made: JobManager?, makingOwn ownClass: JobManager.Type?)
        -> BeginStep
    {
        // The last attempt's result, error and dispatcher are released after the lock: their
        // deinitializers are the user's code (a dispatcher's last reference takes its observers' closures
        // with it), which may lock a job (this one, or another that shares its mutex).
        var previousOutcome: Core.Leftovers?
        var previousDispatcher: Dispatcher?
        defer { withExtendedLifetime((previousOutcome, previousDispatcher)) {} }
        return core.withLock { s in
            guard !s.isActive else { return .refused }
            guard s.state == .ready || s.state.isRestartable else { return .refused }
            let manager: JobManager
            var isFresh = false
            if let existing = lockedManager {
                manager = existing
            } else if let made = made ?? ownClass?.init(job: self) {
                lockedManager = made
                manager = made
                isFresh = true
            } else {
                return .needsManager
            }
            s.state = .ready
            s.attempt += 1
            s.isActive = true
            if s.dispatcher !== dispatcher { previousDispatcher = s.dispatcher }
            s.dispatcher = dispatcher
            previousOutcome = s.takeOutcome()
            s.progress = 0
            s.deliveredProgress = -1
            s.lastProgressDelivery = 0
            s.progressFlushScheduled = false
            s.phaseStartedAt = dispatcher.instruments.timerClock
            s.place = dispatcher.register(self, at: s.pendingPlace(on: dispatcher))
            return .began(attempt: s.attempt, manager: manager, isFresh: isFresh)
        }
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
        end(to: .canceled, attempt: nil)
    }

    /// Cancels the job if it is active, and removes it for good: it cannot be restarted.
    ///
    /// Whoever awaits the job's next attempt (``value``, ``events``) hears `.canceled` then, even when the
    /// job never started: that attempt will never begin.
    public func drop() {
        while true {
            let (wasActive, wake) = core.withLock { s -> (Bool, Bool) in
                if s.isActive { return (true, false) }
                if s.state.canTransition(to: .dropped) { s.state = .dropped }
                // Observers of the attempt that will now never begin are told so, and only they.
                let next = s.attempt + 1
                guard s.observers.contains(where: { $0.attempt == next && $0.kinds.contains(.canceled) }) else {
                    return (false, false)
                }
                return (false, post(.neverBegins(attempt: next), in: &s))
            }
            // An attempt that ended on its own between the look and the end (its operations finished on
            // another thread) leaves an inactive job: dropped by the next turn.
            if wasActive && !end(to: .dropped, attempt: nil) { continue }
            if wake { scheduleDrain() }
            return
        }
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

    /// What ``admitOperation(attempt:)`` decided.
    enum Admission {
        /// The graph is not at `attempt`, or cannot make progress: the operation does not execute.
        case refused
        /// The operation executes.
        case admitted
        /// Counted as executing by the graph, but the attempt ended: the caller ends the operation as
        /// canceled, which its graph counts as done executing.
        case attemptEnded
    }

    /// An operation of `attempt` is about to execute: the graph counts it as executing, and the first one
    /// marks the job executing. One lock for both: the graph lives in the job's state.
    func admitOperation(attempt: Int) -> Admission {
        typealias Marked = (
            wake: Bool, queuedFor: UInt64, dispatcher: Dispatcher?, metrics: DispatcherInstruments.JobMetrics?
        )
        let marked: (admission: Admission, first: Marked?) = core.withLock { s in
            guard s.graph.value.isLive, s.graph.value.attempt == attempt else { return (.refused, nil) }
            s.graph.value.executing += 1
            guard s.isCurrent(attempt) else { return (.attemptEnded, nil) }
            guard s.state == .ready else { return (.admitted, nil) }
            s.state = .executing
            let now = s.dispatcher?.instruments.timerClock ?? 0
            let queuedFor = now &- s.phaseStartedAt
            s.phaseStartedAt = now
            return (.admitted, (post(.started, attempt: attempt, in: &s), queuedFor, s.dispatcher, s.metrics))
        }
        guard let first = marked.first else { return marked.admission }
        first.dispatcher?.instruments.jobBeganExecuting(
            self, attempt: attempt, queuedNanoseconds: first.queuedFor, metrics: first.metrics)
        if first.wake { scheduleDrain() }
        return .admitted
    }

    /// Whether an attempt of the job is registered on `dispatcher` (see ``Dispatcher/manager(for:)``).
    func isRegistered(on dispatcher: Dispatcher) -> Bool {
        core.withLock { $0.isRegistered(on: dispatcher) }
    }

    /// Whether operations of `attempt` may still run.
    func isCurrent(attempt: Int) -> Bool {
        core.withLock { s in s.isCurrent(attempt) }
    }

    /// Records the aggregated progress of `attempt`; clamped, monotonic, throttled.
    func updateProgress(_ value: Double, attempt: Int) {
        let wake = core.withLock { s -> Bool in
            guard s.isActive, s.attempt == attempt, s.state == .executing else { return false }
            let clamped = value.isNaN ? 0 : min(1, max(0, value))
            guard clamped > s.progress else { return false }
            s.progress = clamped
            // Nobody listens to progress: no event and no throttle timer (a later listener hears the
            // next update at once).
            guard s.wants(.progress) else { return false }
            let now = DispatchTime.now().uptimeNanoseconds
            let due = s.lastProgressDelivery &+ Job.progressInterval
            if s.lastProgressDelivery == 0 || now >= due {
                s.lastProgressDelivery = now
                s.deliveredProgress = clamped
                return post(.progress(clamped), attempt: attempt, in: &s)
            } else if !s.progressFlushScheduled {
                s.progressFlushScheduled = true
                DispatchQueue.global().asyncAfter(deadline: DispatchTime(uptimeNanoseconds: due)) { [self] in
                    flushProgress(attempt: attempt)
                }
            }
            return false
        }
        if wake { scheduleDrain() }
    }

    /// Minimum time between two progress callbacks, in nanoseconds.
    static let progressInterval: UInt64 = 100_000_000

    /// The trailing edge of the throttle: queues the latest value, if it was not delivered yet.
    ///
    /// The value is chosen under the lock and queued behind any event already queued, so it can never
    /// overtake an older one.
    private func flushProgress(attempt: Int) {
        let wake = core.withLock { s -> Bool in
            s.progressFlushScheduled = false
            guard s.isActive, s.attempt == attempt, s.state == .executing, s.progress > s.deliveredProgress else {
                return false
            }
            s.deliveredProgress = s.progress
            s.lastProgressDelivery = DispatchTime.now().uptimeNanoseconds
            return post(.progress(s.progress), attempt: attempt, in: &s)
        }
        if wake { scheduleDrain() }
    }

    /// The attempt's work is tried again after `delay` (a retry within the attempt).
    func willRetry(after delay: Duration, error: any Error, attempt: Int) {
        let marked: (wake: Bool, dispatcher: Dispatcher?, metrics: DispatcherInstruments.JobMetrics?)? =
            core.withLock { s in
                guard s.isCurrent(attempt) else { return nil }
                return (post(.retrying(after: delay, error: error), attempt: attempt, in: &s), s.dispatcher, s.metrics)
            }
        guard let marked else { return }
        marked.dispatcher?.instruments.jobWillRetry(
            self, attempt: attempt, after: delay, error: error, metrics: marked.metrics)
        if marked.wake { scheduleDrain() }
    }

    /// - Parameter graphSettled: every operation of the attempt finished and its timers were canceled:
    ///   the end need not visit the manager's graph.
    func finish(result: (any Sendable)?, attempt: Int, graphSettled: Bool = false) {
        end(to: .finished, attempt: attempt, result: result, graphSettled: graphSettled)
    }

    func fail(_ error: any Error, attempt: Int) {
        end(to: .failed, attempt: attempt, error: error)
    }

    func cancelFromOperation(attempt: Int) {
        end(to: .canceled, attempt: attempt)
    }

    /// The one path into a terminal state: guarded so that each attempt ends exactly once.
    ///
    /// - Returns: Whether this call ended the attempt.
    @discardableResult
    private func end(
        to terminal: JobState,
        attempt expected: Int?,
        result: (any Sendable)? = nil,
        error: (any Error)? = nil,
        graphSettled: Bool = false
    ) -> Bool {
        let ending = core.withLock { s in
            end(&s, to: terminal, attempt: expected, result: result, error: error)
        }
        guard let ending else { return false }
        completeEnd(ending, graphSettled: graphSettled)
        return true
    }

    /// What an attempt's end leaves to do once the job's lock is released (``completeEnd(_:graphSettled:)``).
    struct Ending {
        fileprivate let terminal: JobState
        fileprivate let error: (any Error)?
        fileprivate let manager: JobManager?
        fileprivate let attempt: Int
        fileprivate let dispatcher: Dispatcher?
        fileprivate let unregisterNow: Bool
        fileprivate let place: Int
        fileprivate let wake: Bool
        fileprivate let ranFor: UInt64?
        fileprivate let metrics: DispatcherInstruments.JobMetrics?
    }

    /// Ends the attempt in `s`, the job's state, locked by the caller; then the caller, once it released
    /// the lock, hands the result to ``completeEnd(_:graphSettled:)``. `nil` when the attempt is not
    /// `expected` (any, when nil) or cannot end so.
    ///
    /// The terminal event (`.finished(result)`, `.failed(error)`, or `.canceled` for a cancel or a drop)
    /// is built only when someone listens to its kind.
    func end(
        _ s: inout Core,
        to terminal: JobState,
        attempt expected: Int?,
        result: (any Sendable)? = nil,
        error: (any Error)? = nil
    ) -> Ending? {
        guard s.isActive, expected == nil || expected == s.attempt, s.state.canTransition(to: terminal) else {
            return nil
        }
        let ranFor: UInt64? =
            s.state == .executing ? (s.dispatcher?.instruments.timerClock ?? 0) &- s.phaseStartedAt : nil
        s.state = terminal
        s.isActive = false
        s.result = result
        s.error = error
        let attempt = s.attempt
        var wake = false
        if terminal == .finished {
            s.progress = 1
            if s.deliveredProgress < 1 {
                s.deliveredProgress = 1
                wake = post(.progress(1), attempt: attempt, in: &s) || wake
            }
        }
        let kind: JobEvent.Kinds = terminal == .finished ? .finished : terminal == .failed ? .failed : .canceled
        if Core.wants(kind, delegates: s.delegates, observedKinds: s.observedKinds, dispatcher: s.dispatcher) {
            switch terminal {
            case .finished: wake = post(.event(.finished(result), attempt: attempt), in: &s) || wake
            // A failure always comes with its error.
            case .failed: if let error { wake = post(.event(.failed(error), attempt: attempt), in: &s) || wake }
            default: wake = post(.event(.canceled, attempt: attempt), in: &s) || wake
            }
        }
        var unregisterNow = false
        if let dispatcher = s.dispatcher {
            if s.drainScheduled {
                // After the terminal callbacks, so that waiting for the dispatcher includes them.
                s.mailbox.append(.unregister(dispatcher, place: s.place))
            } else {
                unregisterNow = true
            }
        }
        return Ending(
            terminal: terminal, error: error, manager: lockedManager, attempt: attempt, dispatcher: s.dispatcher,
            unregisterNow: unregisterNow, place: s.place, wake: wake, ranFor: ranFor, metrics: s.metrics)
    }

    /// What is left of an attempt's end after the lock: metrics and logs, the hand-off of its callbacks,
    /// the dispatcher's bookkeeping, and (unless `graphSettled`) stopping what is left of its graph.
    func completeEnd(_ ending: Ending, graphSettled: Bool) {
        ending.dispatcher?.instruments.jobEnded(
            self, attempt: ending.attempt, as: ending.terminal, error: ending.error, ranNanoseconds: ending.ranFor,
            metrics: ending.metrics)
        if ending.wake { scheduleDrain() }
        if ending.unregisterNow { ending.dispatcher?.unregister(ending.place) }
        if !graphSettled { ending.manager?.attemptDidEnd(ending.attempt) }
    }

    // MARK: - Event delivery

    /// What the mailbox holds, in order: an event to deliver, or (after a terminal event) telling the
    /// dispatcher the attempt is over.
    enum Mail {
        case event(JobEvent, attempt: Int)
        case unregister(Dispatcher, place: Int)
        /// The job was dropped before `attempt` began: its observers (and only they) hear `.canceled`.
        case neverBegins(attempt: Int)
    }

    /// Puts `mail` in the job's mailbox. Called with `core` locked (`s` is the locked state), so mail is
    /// queued in the order of the transitions.
    ///
    /// - Returns: whether a drain must be scheduled on the callback queue; the caller does that after
    ///   unlocking (``scheduleDrain()``), so no thread waits for the lock while another wakes a worker.
    ///   Mail that arrives while a drain is scheduled or running is delivered by that drain: a job's
    ///   start, progress and end often cost one hop to the callback queue, not three.
    ///
    /// One drain per job at a time (``Core/drainScheduled``) gives order and non-overlap even on a
    /// concurrent callback queue.
    private func post(_ mail: consuming Mail, in s: inout Core) -> Bool {
        s.mailbox.append(mail)
        if s.drainScheduled { return false }
        s.drainScheduled = true
        return true
    }

    /// Puts `event` in the mailbox (see `post(_:in:)`), unless no listener wants its kind: then it is
    /// dropped at once and costs no hop.
    private func post(_ event: consuming JobEvent, attempt: Int, in s: inout Core) -> Bool {
        guard s.wants(event.kind) else { return false }
        return post(.event(event, attempt: attempt), in: &s)
    }

    /// Mail queued and not yet delivered (for tests: what a job queued while its callback queue is held).
    var queuedMailCount: Int { core.withLock { $0.mailbox.count } }

    private func scheduleDrain() {
        if DeliveryBatch.hold(self) { return }
        // Outside a batch this thread may be in the middle of the executor's work: never inline here.
        DirectQueue.hand({ [self] in drain() }, to: callbackQueue, mayRunHere: false)
    }

    /// Delivers the mailbox in order, one item at a time, until it is empty. Runs on the callback queue
    /// (handed there by `scheduleDrain` or by ``DeliveryBatch``).
    func drain() {
        dispatchPrecondition(condition: .onQueue(callbackQueue))
        while true {
            // The listeners are read with each item, so one removed in a callback hears nothing more.
            // They are copies of the lists (no allocation), filtered while delivering.
            let next: (Mail, [WeakDelegate], [ObserverEntry], Dispatcher?)? = core.withLock { s in
                // Moved out, not copied (an event's payload is an existential, whose copies go through
                // the runtime's generic value witnesses).
                guard let mail = s.mailbox.popFirst() else {
                    s.drainScheduled = false
                    return nil
                }
                switch mail {
                case .neverBegins:
                    return (mail, [], s.observers, nil)
                case .unregister:
                    return (mail, [], [], nil)
                case .event:
                    if s.delegates.contains(where: { $0.value == nil }) { s.delegates.removeAll { $0.value == nil } }
                    // An event before an attempt's end-of-mail belongs to that attempt's dispatcher, even
                    // when the job began its next attempt on another one meanwhile.
                    return (mail, s.delegates, s.observers, s.dispatcherOfEarliestMail)
                }
            }
            switch consume next {
            case nil:
                return
            case (.unregister(let dispatcher, let place), _, _, _)?:
                dispatcher.unregister(place)
            case (.event(let event, let attempt), let delegates, let observers, let dispatcher)?:
                deliver(event, to: delegates, observers, attempt: attempt)
                dispatcher?.deliverToObservers(self, event)
            case (.neverBegins(let attempt), _, let observers, _)?:
                for observer in observers where observer.attempt == attempt && observer.kinds.contains(.canceled) {
                    observer.handler(self, .canceled)
                }
            }
        }
    }

    private func deliver(_ event: JobEvent, to delegates: [WeakDelegate], _ observers: [ObserverEntry], attempt: Int) {
        for weakDelegate in delegates {
            guard let delegate = weakDelegate.value else { continue }
            switch event {
            case .started: delegate.jobDidStart(self)
            case .progress(let value): delegate.job(self, didUpdateProgress: value)
            case .retrying(let delay, let error): delegate.job(self, willRetryAfter: delay, error: error)
            case .finished(let result): delegate.job(self, didFinishWith: result)
            case .failed(let error): delegate.job(self, didFailWith: error)
            case .canceled: delegate.jobDidCancel(self)
            }
        }
        let kind = event.kind
        for observer in observers
        where observer.kinds.contains(kind) && (observer.attempt == nil || observer.attempt == attempt) {
            observer.handler(self, event)
        }
    }

    /// Registers an observer of `kinds` of events, of every attempt or (with `attempt`) of one.
    func addObserver(attempt: Int? = nil, kinds: JobEvent.Kinds = .all, _ handler: @escaping Observer) -> UInt64 {
        core.withLock { s in s.addObserver(attempt: attempt, kinds: kinds, handler) }
    }

    typealias Observer = @Sendable (Job, JobEvent) -> Void
    /// An observer: its id, the attempt it follows (`nil`: every attempt), the events it wants and its
    /// closure.
    typealias ObserverEntry = (id: UInt64, attempt: Int?, kinds: JobEvent.Kinds, handler: Observer)

    /// What removes observer `id` later: it holds the job's state, not the job, so that a token or a
    /// stream neither keeps the job alive nor needs a weak reference to it (a weak reference gives the
    /// job a side table, which every later retain and release of the job goes through).
    func observerRemoval(_ id: UInt64) -> @Sendable () -> Void {
        { [core] in Job.removeObserver(id, from: core) }
    }

    static func removeObserver(_ id: UInt64, from core: StripedLocked<Core>) {
        // The observer's closure is released after the lock: what it captured may deinitialize into code
        // that locks a job (an observation token of another job, which may share this one's mutex).
        let removed: [ObserverEntry] = core.withLock { s in
            let removed = s.observers.filter { $0.id == id }
            s.observers.removeAll { $0.id == id }
            s.observedKinds = s.observers.reduce(into: []) { $0.formUnion($1.kinds) }
            return removed
        }
        withExtendedLifetime(removed) {}
    }

    /// Everything mutable about a job, behind one lock.
    ///
    /// At most 104 bytes, so that with its object's header it is one of the allocator's smallest chunks
    /// (see ``StripedLocked``): the flags first (no padding between them), the rarely used parts in
    /// boxes made on first use (``subscribers``, ``metering``, a result), and the graph in an object of
    /// its own. `JobLayoutTests` checks the size.
    struct Core {
        var state: JobState = .ready
        var isActive = false
        /// Whether a drain is scheduled or running on the callback queue.
        var drainScheduled = false
        var progressFlushScheduled = false
        /// The events that `observers` want, together.
        var observedKinds: JobEvent.Kinds = []
        var attempt = 0
        var dispatcher: Dispatcher?
        /// The current (or last) attempt's place in its dispatcher's registry.
        var place = 0
        /// Mail for the callback queue, in transition order (see `post(_:in:)`).
        var mailbox = Mailbox()
        /// The result, boxed: most jobs have none, and an existential in place would take 33 bytes.
        private var boxedResult: ResultBox?
        var error: (any Error)?
        var progress: Double = 0
        var deliveredProgress: Double = -1
        var lastProgressDelivery: UInt64 = 0
        /// The timers' fields, made when a dispatcher's metrics go somewhere.
        private var metering: Metering?
        /// Delegates and observers, made when the first one is added.
        private var subscribers: Subscribers?
        /// The operations of the current attempt, run by ``manager`` under this same lock.
        let graph = JobManager.GraphBox()

        var result: (any Sendable)? {
            get { boxedResult?.value }
            set { boxedResult = newValue.map(ResultBox.init) }
        }

        /// A result and an error taken out of the state, to be released after the lock.
        struct Leftovers {
            fileprivate let result: AnyObject?
            fileprivate let error: (any Error)?
        }

        /// Clears the result and the error, and returns them.
        mutating func takeOutcome() -> Leftovers {
            defer {
                boxedResult = nil
                error = nil
            }
            return Leftovers(result: boxedResult, error: error)
        }

        /// When the attempt was accepted (while ready), then when its first operation began (while
        /// executing), in uptime nanoseconds: for the queued and running timers (0 when the dispatcher's
        /// metrics go nowhere: the clock is not read).
        var phaseStartedAt: UInt64 {
            get { metering?.phaseStartedAt ?? 0 }
            set {
                if let metering { metering.phaseStartedAt = newValue } else if newValue != 0 {
                    metering = Metering(phaseStartedAt: newValue)
                }
            }
        }

        /// The counters and timers of this job's name on its dispatcher (looked up once per attempt).
        var metrics: DispatcherInstruments.JobMetrics? {
            get { metering?.metrics }
            set {
                if let metering { metering.metrics = newValue } else if let newValue {
                    metering = Metering(metrics: newValue)
                }
            }
        }

        var delegates: [WeakDelegate] {
            get { subscribers?.delegates ?? [] }
            _modify { yield &madeSubscribers().delegates }
        }

        var observers: [ObserverEntry] {
            get { subscribers?.observers ?? [] }
            _modify { yield &madeSubscribers().observers }
        }

        private mutating func madeSubscribers() -> Subscribers {
            if let subscribers { return subscribers }
            let made = Subscribers()
            subscribers = made
            return made
        }

        private final class ResultBox {
            let value: any Sendable
            init(_ value: any Sendable) { self.value = value }
        }

        /// Touched only under the job's lock, like the rest of the state.
        private final class Metering {
            @exclusivity(unchecked) var phaseStartedAt: UInt64
            @exclusivity(unchecked) var metrics: DispatcherInstruments.JobMetrics?
            init(phaseStartedAt: UInt64 = 0, metrics: DispatcherInstruments.JobMetrics? = nil) {
                self.phaseStartedAt = phaseStartedAt
                self.metrics = metrics
            }
        }

        /// Touched only under the job's lock, like the rest of the state.
        private final class Subscribers {
            @exclusivity(unchecked) var delegates: [WeakDelegate] = []
            @exclusivity(unchecked) var observers: [ObserverEntry] = []
            @exclusivity(unchecked) var nextObserverID: UInt64 = 0
        }

        /// Whether operations of `attempt` may still run: it is under way and has not ended.
        func isCurrent(_ attempt: Int) -> Bool { isActive && self.attempt == attempt && !state.isTerminal }

        /// The dispatcher of the mail at the head of the mailbox: the one named by the first end of an
        /// attempt still queued (`.unregister`), or else the job's.
        var dispatcherOfEarliestMail: Dispatcher? {
            for mail in mailbox {
                if case .unregister(let dispatcher, _) = mail { return dispatcher }
            }
            return dispatcher
        }

        /// The place in `dispatcher`'s registry of an earlier attempt whose end is still queued
        /// (`.unregister`), if any.
        func pendingPlace(on dispatcher: Dispatcher) -> Int? {
            for mail in mailbox {
                if case .unregister(let other, let place) = mail, other === dispatcher { return place }
            }
            return nil
        }

        /// Whether an attempt is registered on `dispatcher`: the current one, or one whose end is still
        /// queued.
        func isRegistered(on dispatcher: Dispatcher) -> Bool {
            (isActive && self.dispatcher === dispatcher) || pendingPlace(on: dispatcher) != nil
        }

        /// The attempt that is under way, or the one that will begin next.
        var currentOrNextAttempt: Int { isActive ? attempt : attempt + 1 }

        mutating func addObserver(
            attempt: Int?, kinds: JobEvent.Kinds = .all, _ handler: @escaping Observer
        ) -> UInt64 {
            let subscribers = madeSubscribers()
            subscribers.nextObserverID += 1
            subscribers.observers.append((subscribers.nextObserverID, attempt, kinds, handler))
            observedKinds.formUnion(kinds)
            return subscribers.nextObserverID
        }

        /// Whether anyone would hear an event of `kind`: a delegate (it has a method for every event),
        /// an observer of the job that wants it, or one of its dispatcher.
        func wants(_ kind: JobEvent.Kinds) -> Bool {
            Core.wants(kind, delegates: delegates, observedKinds: observedKinds, dispatcher: dispatcher)
        }

        /// ``wants(_:)``, given the fields it reads: for a caller that holds the state `inout`, where a
        /// call of the method made the optimizer copy the whole state first (about 600 instructions).
        static func wants(
            _ kind: JobEvent.Kinds, delegates: [WeakDelegate], observedKinds: JobEvent.Kinds, dispatcher: Dispatcher?
        ) -> Bool {
            !delegates.isEmpty || observedKinds.contains(kind) || (dispatcher?.observedKinds.contains(kind) ?? false)
        }
    }
}

extension Job: CustomStringConvertible {
    /// `NAME#TAG [STATE]`, with the state at the time of the call (not of the event being delivered).
    public var description: String { "\(name)#\(tag) [\(state)]" }
}
