import Dispatch
import Foundation
import CoreMetrics
import Logging
import Synchronization

/// Runs jobs: owns one queue per name, each with its own concurrency limit, and the jobs that are under
/// way.
///
/// The limits are the dispatcher's configuration: give them when you make it, change them while it
/// runs. A queue it was not told about gets ``defaultLimit``. Operations only name their queue.
///
/// ```swift
/// let dispatcher = Dispatcher(name: "media", queues: ["io": 4, "cpu": 2], logger: logger)
/// let thumbnail = try await dispatcher.run(Thumbnail(path: "/tmp/a.jpg"))   // a JobDefinition
/// dispatcher.setLimit(8, for: "io")                                         // at run time
/// await dispatcher.waitForAllJobs()
/// ```
///
/// Use the process-wide ``shared`` dispatcher, or create independent ones (for tests, or to isolate one
/// part of a program: two dispatchers share no queue and no state). A dispatcher holds no thread of
/// its own: operations run on Dispatch's global pool (whose threads end when idle), or on the thread
/// that completed the previous one (see ``QueueOperation/executesInline``).
///
/// - Note: Every method is safe to call from any thread. ``waitUntilAllJobsAreFinished()`` blocks, so do
///   not call it from a job's callback queue.
public final class Dispatcher: Sendable {
    /// The process-wide dispatcher (default limits, no bound on pending jobs, no logging).
    public static let shared = Dispatcher(name: "YXQueue.shared")

    /// The limit of a queue the dispatcher was not told about, unless the dispatcher was made with
    /// another one: the number of active processors (read once a process), at least 2.
    public static var defaultQueueLimit: Int { max(2, ActiveProcessors.count) }

    /// A name for logs, metrics and diagnostics.
    public let name: String
    /// The limit of queues that were not configured.
    public let defaultLimit: Int
    /// Where the dispatcher logs: job lifecycle at debug, retries at info, failures at warning. Each
    /// line carries the dispatcher's and the job's names in its metadata.
    public let logger: Logger

    private let state: Locked<State>
    /// Entered once per active attempt, left after the attempt's terminal callbacks were delivered; and
    /// once per queue slot in use, left when the slot is free (see ``WorkQueue``), so that
    /// ``waitForAllJobs()`` returns with every queue idle.
    private let activity = DispatchGroup()
    /// ``observedKinds``, published for jobs that post events.
    private let observedKindsStorage = Atomic<UInt8>(0)
    /// The first queues, found by name without the lock (each ready operation looks its queue up).
    private let directory = QueueDirectory()
    let instruments: DispatcherInstruments

    /// Creates an independent dispatcher.
    ///
    /// - Parameters:
    ///   - name: For logs, metrics and diagnostics.
    ///   - queues: The limit of each queue, by name (for example `["io": 4, "cpu": 2]`). Limits below 1
    ///     count as 1.
    ///   - defaultLimit: The limit of any other queue (default ``defaultQueueLimit``).
    ///   - maxPendingJobs: How many jobs may be active before ``submit(_:)`` waits (default: no bound).
    ///   - logger: Where to log (default: nowhere, as a library should: pass your program's logger to see
    ///     the dispatcher's lines).
    ///   - metricsFactory: Where counters and timers go (default: the process's `MetricsSystem`, as
    ///     bootstrapped by the program before the dispatcher is made). The counters
    ///     `yxqueue.jobs.started`, `.finished`, `.failed`, `.canceled` (dropped jobs count as canceled)
    ///     and `.retries`, and the timers `yxqueue.job.queued` (start to first operation) and
    ///     `yxqueue.job.running` (first operation to end), each with the dimensions `dispatcher` and
    ///     `job` (the job's name). With swift-metrics' no-op factory, a job does no metrics work.
    public init(
        name: String = "YXQueue",
        queues: [String: Int] = [:],
        defaultLimit: Int = Dispatcher.defaultQueueLimit,
        maxPendingJobs: Int? = nil,
        logger: Logger = Dispatcher.silentLogger,
        metricsFactory: (any MetricsFactory)? = nil
    ) {
        self.name = name
        self.defaultLimit = max(1, defaultLimit)
        var logger = logger
        logger[metadataKey: "dispatcher"] = "\(name)"
        self.logger = logger
        self.state = Locked(State(configured: queues.mapValues { max(1, $0) }, maxPendingJobs: maxPendingJobs))
        self.instruments = DispatcherInstruments(dispatcher: name, logger: logger, metricsFactory: metricsFactory)
    }

    /// A logger that drops everything: the default, so that a library prints nothing unless asked.
    public static let silentLogger = Logger(label: "yxqueue", factory: { _ in SwiftLogNoOpLogHandler() })

    // MARK: - Jobs

    /// Starts a job on this dispatcher; the same as `job.start(on: self)`.
    ///
    /// - Returns: Whether a new attempt began (see ``Job/start(on:)``).
    @discardableResult
    public func add(_ job: Job) -> Bool {
        job.start(on: self)
    }

    /// Starts a job once fewer than ``maxPendingJobs`` jobs are active, waiting without blocking a thread
    /// until then: a producer of millions of jobs keeps its memory flat.
    ///
    /// Cancelling the waiting task ends the wait (the job is not started) with `CancellationError`.
    ///
    /// - Returns: Whether a new attempt began (see ``Job/start(on:)``).
    @discardableResult
    public func submit(_ job: Job) async throws -> Bool {
        try await waitForRoom()
        defer { releaseReservation() }
        return job.start(on: self)
    }

    /// A job admitted by `waitForRoom` registered (or did not start): its reserved place is no longer
    /// needed.
    func releaseReservation() {
        let resumed = state.withLock { s -> [Waiter] in
            s.reserved -= 1
            return s.takeWaitersThatFit()
        }
        for waiter in resumed { waiter.continuation.resume() }
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

    /// Holds every operation that has not started yet (on existing and future queues); operations
    /// already executing go on.
    public func pauseAll() {
        setPaused(true)
    }

    /// Releases what ``pauseAll()`` held.
    public func resumeAll() {
        setPaused(false)
    }

    private func setPaused(_ paused: Bool) {
        // Each queue takes the setting under the dispatcher's lock: a pause and a resume from two threads
        // then leave every queue as `isPaused` says. The operations a resume releases start after.
        let start = state.withLock { s in
            s.isPaused = paused
            return s.queues.values.map { ($0, $0.setPaused(paused)) }
        }
        for (queue, operations) in start where !operations.isEmpty { queue.start(operations) }
    }

    /// Whether ``pauseAll()`` is in force.
    public var isPaused: Bool { state.withLock { $0.isPaused } }

    /// The jobs that are under way, in no particular order.
    public var activeJobs: [Job] {
        state.withLock { s in
            // A job restarted while its previous attempt's end was being delivered may briefly hold two
            // places: it is listed once.
            var seen = Set<ObjectIdentifier>()
            return s.registry.compactMap { entry in
                guard let job = entry?.job, seen.insert(ObjectIdentifier(job)).inserted else { return nil }
                return job
            }
        }
    }

    /// How many jobs are under way.
    public var activeJobCount: Int { state.withLock { $0.activeCount } }

    /// The manager of a job that is active on this dispatcher (the original's "find the JobManager").
    public func manager(for job: Job) -> JobManager? {
        job.isRegistered(on: self) ? job.manager : nil
    }

    /// Blocks until no job is active, every terminal callback was delivered, and no operation holds a
    /// queue slot: an operation of a canceled job that goes on (one that ignores its cancellation) is
    /// waited for until it completes.
    ///
    /// - Warning: Do not call from a job's callback queue (it would wait for itself).
    public func waitUntilAllJobsAreFinished() {
        activity.wait()
    }

    /// Waits, without blocking a thread, until no job is active, every terminal callback was delivered,
    /// and no operation holds a queue slot (see ``waitUntilAllJobsAreFinished()``).
    public func waitForAllJobs() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            activity.notify(queue: .global()) { continuation.resume() }
        }
    }

    // MARK: - Back-pressure

    /// How many jobs may be active before ``submit(_:)`` waits (`nil`: no bound).
    public var maxPendingJobs: Int? {
        get { state.withLock { $0.maxPendingJobs } }
        set {
            let resumed = state.withLock { s in
                s.maxPendingJobs = newValue.map { max(1, $0) }
                return s.takeWaitersThatFit()
            }
            for waiter in resumed { waiter.continuation.resume() }
        }
    }

    /// Waits until a job may start under ``maxPendingJobs``, and reserves its place: call
    /// ``releaseReservation()`` once the job was started (or not).
    func waitForRoom() async throws {
        // Room now and nobody in line: the place is reserved without suspending (no continuation, no
        // task switch), which is every job of a producer that keeps up with its bound.
        if Task.isCancelled { throw CancellationError() }
        let reservedAtOnce = state.withLock { s -> Bool in
            guard s.waiters.isEmpty && s.hasRoom else { return false }
            s.reserved += 1
            return true
        }
        if reservedAtOnce { return }
        let id = state.withLock { s -> UInt64 in
            s.nextWaiterID += 1
            return s.nextWaiterID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if s.canceledWaiters.remove(id) != nil { return true }
                    if s.waiters.isEmpty && s.hasRoom {
                        s.reserved += 1
                        s.admitted.insert(id)
                        return true
                    }
                    s.waiters.append(Waiter(id: id, continuation: continuation))
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { s -> Waiter? in
                if s.admitted.contains(id) { return nil }
                if let index = s.waiters.firstIndex(where: { $0.id == id }) { return s.waiters.remove(at: index) }
                s.canceledWaiters.insert(id)
                return nil
            }
            waiter?.continuation.resume()
        }
        let admitted = state.withLock { s in
            s.canceledWaiters.remove(id)
            return s.admitted.remove(id) != nil
        }
        guard admitted else { throw CancellationError() }
        if Task.isCancelled {
            releaseReservation()
            throw CancellationError()
        }
    }

    // MARK: - Queues

    /// Sets the limit of a queue, now and for the queue's future operations. A higher limit starts
    /// waiting operations at once; a lower one lets running operations finish and starts none until
    /// fewer than the new limit run. Limits below 1 count as 1.
    public func setLimit(_ limit: Int, for queue: String) {
        let limit = max(1, limit)
        // As for a pause: the queue takes the limit under the dispatcher's lock, in the order recorded.
        let start = state.withLock { s -> (WorkQueue, [QueueOperation])? in
            s.configured[queue] = limit
            return s.queues[queue].map { ($0, $0.setLimit(limit)) }
        }
        if let (existing, operations) = start, !operations.isEmpty { existing.start(operations) }
        logger.debug("queue limit", metadata: ["queue": "\(queue)", "limit": "\(limit)"])
    }

    /// The limit of a queue: the configured one, or ``defaultLimit``.
    public func limit(for queue: String) -> Int {
        state.withLock { $0.configured[queue] } ?? defaultLimit
    }

    /// What a queue is doing now: operations executing and operations waiting for a slot.
    public func load(of queue: String) -> (running: Int, waiting: Int) {
        state.withLock { $0.queues[queue] }?.counts ?? (0, 0)
    }

    /// The names of the queues that ran or hold operations.
    public var queueNames: [String] { state.withLock { Array($0.queues.keys) } }

    func workQueue(named name: String) -> WorkQueue {
        if let known = directory.queue(named: name) { return known }
        return state.withLock { s in
            if let existing = s.queues[name] { return existing }
            let made = WorkQueue(
                name: name, limit: s.configured[name] ?? defaultLimit, isPaused: s.isPaused, activity: activity)
            s.queues[name] = made
            directory.add(made)
            return made
        }
    }

    /// Submits a ready operation to its queue.
    func submit(_ operation: QueueOperation, handedOver: Bool) {
        workQueue(named: operation.queue).submit(operation, handedOver: handedOver)
    }

    /// Submits ready operations to their queues.
    func submit(_ operations: [QueueOperation], handedOver: Bool) {
        if operations.count == 1 {
            submit(operations[0], handedOver: handedOver)
            return
        }
        var byQueue: [String: [QueueOperation]] = [:]
        for operation in operations { byQueue[operation.queue, default: []].append(operation) }
        for (name, group) in byQueue { workQueue(named: name).submit(group, handedOver: handedOver) }
    }

    // MARK: - Observation

    /// Calls `handler` with every event of every job of this dispatcher, on each job's callback queue,
    /// in each job's order, until the returned token is released or invalidated. What Alamofire calls
    /// an event monitor: one place for logs, metrics or a progress board.
    ///
    /// ```swift
    /// let token = dispatcher.observe { job, event in print("\(job.name): \(event)") }
    /// ```
    ///
    /// An observer of every event makes each job of the dispatcher deliver its progress too: name the
    /// kinds you need with ``observe(_:_:)`` when you do not need them all.
    public func observe(_ handler: @escaping @Sendable (Job, JobEvent) -> Void) -> JobObservation {
        observe(.all, handler)
    }

    /// Calls `handler` with the events of the given kinds of every job of this dispatcher, on each
    /// job's callback queue, in each job's order, until the returned token is released or invalidated.
    ///
    /// ```swift
    /// let token = dispatcher.observe(.failed) { job, event in
    ///     if case .failed(let error) = event { print("\(job.name) failed: \(error)") }
    /// }
    /// ```
    ///
    /// A job queues only the events that someone wants (see ``JobEvent/Kinds``).
    public func observe(
        _ kinds: JobEvent.Kinds, _ handler: @escaping @Sendable (Job, JobEvent) -> Void
    ) -> JobObservation {
        let id = state.withLock { s -> UInt64 in
            s.nextObserverID += 1
            s.observers.append((s.nextObserverID, kinds, handler))
            observedKindsStorage.store(s.observedKinds.rawValue, ordering: .releasing)
            return s.nextObserverID
        }
        return JobObservation { [weak self] in
            guard let self else { return }
            // The closure is released after the lock: what it captured may deinitialize into code that
            // locks a job, and a job's lock is held around this dispatcher's (`register`).
            let removed = self.state.withLock { s -> State.Observer? in
                guard let index = s.observers.firstIndex(where: { $0.id == id }) else { return nil }
                let removed = s.observers.remove(at: index)
                self.observedKindsStorage.store(s.observedKinds.rawValue, ordering: .releasing)
                return removed
            }
            withExtendedLifetime(removed) {}
        }
    }

    /// The events that the dispatcher-wide observers want, together (a job delivers those even without
    /// listeners of its own). Read without the lock: an observer added while an event is posted may
    /// miss that event, as it would if it came a moment later.
    var observedKinds: JobEvent.Kinds { JobEvent.Kinds(rawValue: observedKindsStorage.load(ordering: .acquiring)) }

    /// Called in a job's drain, on its callback queue.
    func deliverToObservers(_ job: Job, _ event: JobEvent) {
        let kind = event.kind
        guard observedKinds.contains(kind) else { return }
        let observers = state.withLock { $0.observers }  // a copy of the list: no allocation
        for observer in observers where observer.kinds.contains(kind) { observer.handler(job, event) }
    }

    // MARK: - Bookkeeping (called by Job)

    /// Registers an attempt of `job`, and returns its place in the registry, which the job gives back
    /// to ``unregister(_:)`` when the attempt is over. Called with the job's lock held: never calls back
    /// into the job.
    ///
    /// - Parameter place: The job's place here, when an earlier attempt of it is still registered (its
    ///   unregistration waits behind its terminal callbacks): the job then counts once, with two
    ///   registrations.
    func register(_ job: Job, at place: Int?) -> Int {
        activity.enter()
        return state.withLock { s in
            if let place {
                s.registry[place]?.count += 1
                return place
            }
            s.activeCount += 1
            let entry = Entry(job: job, count: 1)
            if let free = s.freePlaces.popLast() {
                s.registry[free] = entry
                return free
            }
            s.registry.append(entry)
            return s.registry.count - 1
        }
    }

    /// Ends a registration that ``register(_:at:)`` made.
    func unregister(_ place: Int) {
        let resumed = state.withLock { s -> [Waiter] in
            guard place < s.registry.count, let count = s.registry[place]?.count else { return [] }
            if count > 1 {
                s.registry[place]?.count = count - 1
                return []
            }
            s.registry[place] = nil
            s.freePlaces.append(place)
            s.activeCount -= 1
            return s.takeWaitersThatFit()
        }
        for waiter in resumed { waiter.continuation.resume() }
        activity.leave()
    }

    /// A job under way, and how many of its attempts are registered (two while the previous attempt's
    /// end is still being delivered).
    private struct Entry {
        let job: Job
        var count: Int
    }

    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var configured: [String: Int]
        var maxPendingJobs: Int?
        /// Every queue made; the first ones are also in `directory`, found there without the lock.
        var queues: [String: WorkQueue] = [:]
        /// The jobs under way, each at the place its registration returned; freed places are reused.
        /// (A table, not a dictionary keyed by the job: each job gives its place back, so nothing is
        /// hashed, twice per job.)
        var registry: [Entry?] = []
        var freePlaces: [Int] = []
        /// The occupied places of `registry`.
        var activeCount = 0
        var isPaused = false
        typealias Observer = (id: UInt64, kinds: JobEvent.Kinds, handler: @Sendable (Job, JobEvent) -> Void)
        var observers: [Observer] = []
        var observedKinds: JobEvent.Kinds { observers.reduce(into: []) { $0.formUnion($1.kinds) } }
        var nextObserverID: UInt64 = 0
        var waiters: [Waiter] = []
        /// Waiters cancelled before they were in line, and waiters given a place.
        var canceledWaiters: Set<UInt64> = []
        var admitted: Set<UInt64> = []
        var nextWaiterID: UInt64 = 0
        /// Jobs admitted by `submit` that did not register yet: they count, so that a burst of resumed
        /// waiters does not overshoot the bound.
        var reserved = 0

        init(configured: [String: Int], maxPendingJobs: Int?) {
            self.configured = configured
            self.maxPendingJobs = maxPendingJobs.map { max(1, $0) }
        }

        var hasRoom: Bool {
            guard let maxPendingJobs else { return true }
            return activeCount + reserved < maxPendingJobs
        }

        /// The waiters that may go now, in order, each with a reserved place.
        mutating func takeWaitersThatFit() -> [Waiter] {
            guard !waiters.isEmpty else { return [] }
            let room = maxPendingJobs.map { max(0, $0 - activeCount - reserved) } ?? waiters.count
            let count = min(room, waiters.count)
            let taken = Array(waiters.prefix(count))
            waiters.removeFirst(count)
            reserved += count
            for waiter in taken { admitted.insert(waiter.id) }
            return taken
        }
    }
}
