import Dispatch

/// One step of a job's work, run by the job's ``Dispatcher`` on a named queue.
///
/// Override ``execute(completion:)`` and call `completion` exactly once, from any thread, when the work
/// is done. No thread is blocked while the work waits: the operation keeps its slot in its queue's
/// concurrency limit until `completion` is called.
///
/// ```swift
/// final class HashOperation: QueueOperation, @unchecked Sendable {
///     let path: String
///     init(path: String) {
///         self.path = path
///         super.init(queue: "hash")
///     }
///     required init(queue: String, resourceIdentifier: String? = nil) {
///         self.path = ""
///         super.init(queue: queue, resourceIdentifier: resourceIdentifier)
///     }
///     override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
///         DispatchQueue.global().async { [path] in
///             do { completion(.success(try digest(of: path))) }
///             catch { completion(.failure(error)) }
///         }
///     }
///     override func operationDidCancel() { /* stop the work; it then calls completion */ }
/// }
/// ```
///
/// For typed results without a subclass, use ``TaskOperation`` (an `async` closure) or define the job
/// as a ``JobDefinition``. A subclass restates `@unchecked Sendable` because Swift cannot check a class
/// hierarchy; keep its own mutable state behind a lock.
///
/// Cancellation: ``operationDidCancel()`` is called once when an executing operation is canceled; the
/// work should stop within a fraction of a second and call `completion` (with any result or error: a
/// canceled operation always counts as canceled). An operation canceled before it started never
/// executes.
///
/// - Note: Since YXQueue 1.0 an operation is no longer a Foundation `Operation`: the dispatcher runs it
///   on an executor of its own (see ``Dispatcher``), which costs a fraction of an `OperationQueue`'s
///   hand-offs per operation.
open class QueueOperation: @unchecked Sendable {
    /// How an operation ended.
    public enum Outcome: Sendable {
        /// The work finished with this result.
        case success((any Sendable)?)
        /// The work failed with this error.
        case failure(any Error)
        /// The operation was canceled (before or while it ran).
        case canceled
    }

    /// The name of the dispatcher queue this operation runs in; the queue's concurrency limit is the
    /// dispatcher's (see ``Dispatcher/setLimit(_:for:)``).
    public let queue: String
    /// An identifier of the resource the operation works on (for ``JobManager/operations(withResourceIdentifier:)``).
    public var resourceIdentifier: String? { boxedResourceIdentifier?.value }
    private let boxedResourceIdentifier: ResourceIdentifier?

    /// The operation's mutable state, touched only inside ``withState(_:)`` (under the operation's lock
    /// in ``StripedLocks/operations``): no run-time exclusivity check is needed, nor made.
    @exclusivity(unchecked) private var state = State()

    /// Runs `body` with exclusive access to the state.
    @inline(__always)
    private func withState<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        try StripedLocks.operations.withLock(for: self) { try body(&state) }
    }

    /// Creates an operation. Subclasses that add stored properties give them defaults or override this
    /// initializer (the default ``JobManager`` creates operations through it).
    ///
    /// - Parameters:
    ///   - queue: The dispatcher queue it runs in.
    ///   - resourceIdentifier: What it works on, if anything.
    public required init(queue: String, resourceIdentifier: String? = nil) {
        self.queue = queue
        self.boxedResourceIdentifier = resourceIdentifier.map(ResourceIdentifier.init)
    }

    // MARK: - For subclasses

    /// The work. Call `completion` exactly once; extra calls are ignored.
    ///
    /// The default completes at once with no result.
    open func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        completion(.success(nil))
    }

    /// Called once, on the canceling thread, when the operation is canceled while executing. The default
    /// does nothing (the work can also poll ``QueueOperation/isCancelled``).
    ///
    /// It can arrive before ``QueueOperation/execute(completion:)`` is called, when the cancel comes while the
    /// operation is being started: work that is interrupted here should also check ``QueueOperation/isCancelled`` when
    /// it begins. Call `completion` in any case.
    open func operationDidCancel() {}

    /// Whether ``QueueOperation/execute(completion:)`` only starts work that goes on elsewhere and returns at once,
    /// never blocking (default `false`).
    ///
    /// Such an operation is started on the thread that frees its slot, typically the thread that
    /// completed the previous operation of its queue (a transfer thread, for downloads), or on the thread
    /// that submits its job: no hand-off to another thread. Leave it `false` for work that computes or
    /// blocks in `execute`: it then runs on a pool thread.
    open var executesInline: Bool { false }

    /// Gives this operation's slot in its queue to the next operation in line, while this one goes on.
    ///
    /// For an operation whose remaining work needs none of what its queue's limit counts: a download
    /// whose bytes are all in, say, has only its file to name, and the limit counts transfers. The next
    /// operation in line starts at once (on this thread when it ``executesInline``); this operation
    /// ends as usual, with its completion, and its end frees no slot.
    ///
    /// Call it from the operation's own work, while it executes.
    ///
    /// ```swift
    /// override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
    ///     fetch { data in
    ///         self.releaseSlot()  // the limit counts fetches: the next one starts now
    ///         completion(Result { try self.store(data) })
    ///     }
    /// }
    /// ```
    ///
    /// - Returns: Whether the slot was given away: false when the operation's work is not under way (not
    ///   started yet, or ended, even while its manager's ``JobManager/operationDidFinish(_:)`` runs) or
    ///   it gave its slot away before.
    @discardableResult
    public final func releaseSlot() -> Bool {
        let queue = withState { s -> WorkQueue? in
            guard s.phase == .executing else { return nil }
            return s.workQueue.take()
        }
        guard let queue else { return false }
        queue.slotFreed()
        return true
    }

    /// Reports the fraction of this operation's work that is done (0…1). Cheap; call it as often as you
    /// like: the job aggregates and throttles.
    public func reportProgress(_ fraction: Double) {
        guard let owner = withState({ s in s.phase == .executing ? s.owner : nil }) else { return }
        owner.manager.operation(self, attempt: owner.attempt, index: owner.index, didReportProgress: fraction)
    }

    /// The weight of this operation in the job's aggregated progress (default 1; 0 = not counted).
    ///
    /// Set it in ``JobManager/makeOperations()``, or later, while the operation runs, once it knows how
    /// much of the job's work it does (a step that turns out to do the whole job, say). The job's
    /// progress never goes backwards: a change that would lower it takes effect as the work advances.
    public var progressWeight: Double {
        get { withState { $0.weight } }
        set {
            let owner = withState { s -> Owner? in
                s.weight = newValue
                return s.phase == .finished ? nil : s.owner
            }
            if let owner {
                owner.manager.operation(self, attempt: owner.attempt, index: owner.index, didChangeWeight: newValue)
            }
        }
    }

    // MARK: - Relations

    /// The manager running this operation (from when the manager takes it until it finishes).
    public var manager: JobManager? { withState { $0.owner?.manager } }
    /// The job this operation works for (from when the manager takes it until it finishes).
    public var job: Job? { withState { $0.owner?.job } }
    /// The attempt this operation belongs to (from when the manager takes it until it finishes).
    var boundAttempt: Int? { withState { $0.owner?.attempt } }

    /// Operations that must finish successfully before this one is submitted to its queue.
    public var prerequisites: [QueueOperation] { withState { $0.prerequisites } }

    /// Makes this operation wait for `operation`. Call before this operation is submitted (in
    /// ``JobManager/makeOperations()`` or ``JobManager/operationDidFinish(_:)``).
    ///
    /// An operation that waits for itself, or one added after the operation was submitted, makes the
    /// job fail with ``JobError/invalidOperationGraph(_:)``. So does a pending operation of the job
    /// that waits for one not (yet) in the job, as soon as the manager next looks at the graph, which
    /// may be on another thread at any moment: give an operation already in the job a new
    /// prerequisite only after ``JobManager/addOperations(_:)`` took that prerequisite in.
    public func addPrerequisite(_ operation: QueueOperation) {
        withState { s in
            if !s.prerequisites.contains(where: { $0 === operation }) { s.prerequisites.append(operation) }
        }
    }

    // MARK: - State and outcome

    /// Whether the operation was canceled (on its own, or because its job ended).
    public var isCancelled: Bool { withState { $0.isCancelled } }
    /// Whether the work is under way.
    public var isExecuting: Bool { withState { $0.phase == .executing } }
    /// Whether the operation ended (finished, failed or canceled).
    public var isFinished: Bool { withState { $0.phase == .finished } }

    /// How the operation ended, once it did.
    public var outcome: Outcome? { withState { $0.outcome.outcome } }
    /// The result, when the operation succeeded.
    public var result: (any Sendable)? {
        // Taken under the lock: one copy of the value, not one of the outcome and then of the value.
        withState { $0.outcome.result }
    }
    /// The error, when the operation failed.
    public var error: (any Error)? {
        withState { $0.outcome.error }
    }

    /// Cancels the operation: one that is waiting never executes, an executing one is told at once
    /// through ``operationDidCancel()``, and its job is canceled.
    ///
    /// To stop a job, cancel the job (``Job/cancel()``): it cancels its operations. A subclass that
    /// overrides this calls `super.cancel()`.
    open func cancel() {
        let signal = withState { s -> Bool in
            s.isCancelled = true
            return s.phase == .executing
        }
        if signal { signalCancel() }
    }

    // MARK: - Execution (called by the executor)

    /// Runs the operation in `queue`, which gave it a slot: executes it unless it or its job was
    /// canceled. The slot is freed when it ends.
    func run(in queue: WorkQueue) {
        let claim: (claimed: Bool, owner: Owner?, canceled: Bool) = withState { s in
            guard s.phase == .idle else { return (false, nil, false) }
            s.phase = .starting
            s.workQueue = queue
            return (true, s.owner, s.isCancelled)
        }
        guard claim.claimed else {
            queue.slotFreed()
            return
        }
        guard let owner = claim.owner else {
            finish(.canceled, notify: nil, didExecute: false)
            return
        }
        if claim.canceled {
            // Canceled on its own before it ran: its job is canceled too, or the job would wait for this
            // operation for ever. (When the job itself was canceled first, the manager ignores this.)
            finish(.canceled, notify: owner, didExecute: false)
            return
        }
        guard owner.manager.operationWillExecute(self, attempt: owner.attempt, index: owner.index) else {
            finish(.canceled, notify: nil, didExecute: false)
            return
        }
        let canceledMeanwhile = withState { s -> Bool in
            s.phase = .executing
            return s.isCancelled
        }
        if canceledMeanwhile {
            // Canceled between the check above and now: let the work know at once.
            signalCancel()
        }
        execute { [self] result in
            switch result {
            case .success(let value): complete(.success(value))
            case .failure(let error): complete(error is CancellationError ? .canceled : .failure(error))
            }
        }
    }

    private func signalCancel() {
        let first = withState { s -> Bool in
            guard !s.cancelSignaled else { return false }
            s.cancelSignaled = true
            return true
        }
        if first { operationDidCancel() }
    }

    /// Records the outcome and tells the manager and the queue. The events this causes are handed to
    /// callback queues at the end (one ``DeliveryBatch``): after the executor is done with this
    /// operation, so that a ``DirectQueue`` may run its observers right here.
    private func complete(_ outcome: Outcome) {
        DeliveryBatch.collecting { record(outcome) }
    }

    private func record(_ outcome: Outcome) {
        // The outcome is copied once, into the state; the rest of the way it is passed on borrowed (an
        // outcome holds an existential, whose copies go through the runtime's generic value witnesses).
        //
        // A manager whose `operationDidFinish` may run (a subclass's) sees the operation as it always did:
        // still bound to its job and not yet finished; it is let go after the manager was told. For the
        // others, one lock: the outcome is recorded, the operation counts as finished, and it lets go of
        // its job, manager and queue slot, moved out (no copies to retain and release) and told after.
        //
        // Either way its slot is taken out here, with the outcome: the work is over, so `releaseSlot()`
        // has nothing to give from now on. The job's end may be seen on another thread before this one
        // gets past the manager (a job with no listener unregisters inside the manager's call; one whose
        // mail a drain is delivering already, at once), and a late `releaseSlot()` must not answer true.
        let completed: (owner: Owner?, queue: WorkQueue?, canceled: Bool, letGo: Bool)? = withState { s in
            guard s.phase == .executing, s.outcome.isNone else { return nil }
            s.outcome = s.isCancelled ? .canceled : StoredOutcome(outcome)
            if s.owner?.manager.hasOperationDidFinishHook ?? false {
                return (s.owner, s.workQueue.take(), s.isCancelled, false)
            }
            s.phase = .finished
            return (s.owner.take(), s.workQueue.take(), s.isCancelled, true)
        }
        guard let completed else { return }
        if let owner = completed.owner {
            let manager = owner.manager
            if completed.canceled {
                manager.operationDidComplete(
                    self, attempt: owner.attempt, index: owner.index, outcome: .canceled, didExecute: true)
            } else {
                manager.operationDidComplete(
                    self, attempt: owner.attempt, index: owner.index, outcome: outcome, didExecute: true)
            }
        }
        if !completed.letGo { letGo() }
        completed.queue?.slotFreed()
    }

    /// The operation counts as finished, lets go of its job and manager (released after the lock: the
    /// last reference to the job may go with them, and with it code of its subclasses), and frees its
    /// queue slot.
    private func letGo() {
        let (owner, queue) = withState { s -> (Owner?, WorkQueue?) in
            s.phase = .finished
            return (s.owner.take(), s.workQueue.take())
        }
        _ = consume owner  // the job, its manager and this operation no longer hold each other
        queue?.slotFreed()
    }

    /// Ends an operation that did not execute (canceled, or its attempt is over).
    private func finish(_ outcome: Outcome, notify owner: Owner?, didExecute: Bool) {
        withState { s in
            if s.outcome.isNone { s.outcome = StoredOutcome(outcome) }
        }
        if let owner {
            owner.manager.operationDidComplete(
                self, attempt: owner.attempt, index: owner.index, outcome: outcome, didExecute: didExecute)
        }
        letGo()
    }

    // MARK: - Binding (called by JobManager)

    /// Hands the operation to `manager` for `attempt`, as node `index` of its graph.
    ///
    /// - Parameter movingFromReplacedSet: the operation belongs to a set of this attempt that a retry
    ///   replaced: it moves to the new set (if it never ran) instead of counting as added twice.
    /// - Returns: `.added` with the operation's ``progressWeight``, `.alreadyBound` when it already
    ///   belongs to that attempt (added twice), or `.alreadyRan` when it ran before (an operation runs
    ///   once).
    func bind(to manager: JobManager, attempt: Int, index: Int, movingFromReplacedSet: Bool = false) -> BindResult {
        // An owner this replaces is released after the operation's lock (see `letGo()`).
        var replaced: Owner?
        defer { _ = consume replaced }
        return withState { s in
            let place = Place(manager: ObjectIdentifier(manager), attempt: attempt, index: index)
            if !movingFromReplacedSet, let current = s.place, current.manager == place.manager,
                current.attempt == attempt
            {
                return .alreadyBound
            }
            guard s.phase == .idle else { return .alreadyRan }
            replaced = s.owner.take()
            s.owner = Owner(manager: manager, job: manager.job, attempt: attempt, index: index)
            s.place = place
            return .added(weight: s.weight)
        }
    }

    enum BindResult { case added(weight: Double), alreadyBound, alreadyRan }

    /// The operation's index in `manager`'s graph for `attempt`, if it belongs to it.
    func nodeIndex(in manager: JobManager, attempt: Int) -> Int? {
        withState { s in
            guard let place = s.place, place.manager == ObjectIdentifier(manager), place.attempt == attempt else {
                return nil
            }
            return place.index
        }
    }

    /// Lets go of the job and manager of an operation that was never started (its attempt ended).
    func unbindIfIdle() {
        let owner = withState { s in s.phase == .idle ? s.owner.take() : nil }
        _ = consume owner  // released after the operation's lock (see `letGo()`)
    }

    /// Strong references, held only while the operation belongs to a live attempt: released when it
    /// finishes, or when its attempt ends before it was submitted.
    private struct Owner {
        let manager: JobManager
        /// Keeps the job (which owns the manager, that holds it unowned) alive while the operation runs.
        let job: Job
        private let attempt32: Int32
        private let index32: Int32
        var attempt: Int { Int(attempt32) }
        var index: Int { Int(index32) }

        init(manager: JobManager, job: Job, attempt: Int, index: Int) {
            self.manager = manager
            self.job = job
            self.attempt32 = Int32(truncatingIfNeeded: attempt)
            self.index32 = Int32(truncatingIfNeeded: index)
        }
    }

    /// Where the operation sits in a graph; kept after it finished, so dependents can find it. (Attempt
    /// and index fit in 32 bits each: a job would need two billion restarts or operations first; the
    /// smaller layout is memory per queued job.)
    private struct Place {
        let manager: ObjectIdentifier
        private let attempt32: Int32
        private let index32: Int32
        var attempt: Int { Int(attempt32) }
        var index: Int { Int(index32) }

        init(manager: ObjectIdentifier, attempt: Int, index: Int) {
            self.manager = manager
            self.attempt32 = Int32(truncatingIfNeeded: attempt)
            self.index32 = Int32(truncatingIfNeeded: index)
        }
    }

    /// The fields in an order that leaves no padding: with the rest, an operation is 120 bytes (see
    /// ``StoredOutcome``).
    private struct State {
        enum Phase { case idle, starting, executing, finished }
        var phase = Phase.idle
        var isCancelled = false
        var cancelSignaled = false
        var owner: Owner?
        var place: Place?
        var prerequisites: [QueueOperation] = []
        var weight: Double = 1
        var outcome = StoredOutcome.none
        /// The queue whose slot the operation holds while it runs (nil once it gave the slot away).
        var workQueue: WorkQueue?
    }
}

extension QueueOperation: CustomStringConvertible {
    /// `QUEUE` or `QUEUE:RESOURCE`.
    public var description: String {
        resourceIdentifier.map { "\(queue):\($0)" } ?? queue
    }
}
