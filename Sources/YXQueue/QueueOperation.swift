import Foundation

/// One step of a job's work: an asynchronous Foundation `Operation` run by the job's ``Dispatcher``.
///
/// Override ``execute(completion:)`` and call `completion` exactly once, from any thread, when the work
/// is done. No thread is blocked while the work waits: the operation stays executing (and keeps its slot
/// in the queue's concurrency limit) until `completion` is called.
///
/// ```swift
/// final class HashOperation: QueueOperation {
///     override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
///         guard let job = job as? HashJob else { return completion(.success(nil)) }
///         DispatchQueue.global().async {
///             do { completion(.success(try digest(of: job.path, progress: self.reportProgress))) }
///             catch { completion(.failure(error)) }
///         }
///     }
///     override func operationDidCancel() { /* stop the work; it then calls completion */ }
/// }
/// ```
///
/// Cancellation: ``operationDidCancel()`` is called once when an executing operation is canceled; the
/// work should stop within a fraction of a second and call `completion` (with any result or error: a
/// canceled operation always counts as canceled). An operation canceled before it started never
/// executes.
///
/// - Important: Order operations with ``addPrerequisite(_:)``, not Foundation's `addDependency(_:)`;
///   `addDependency` with another `QueueOperation` is redirected to ``addPrerequisite(_:)``.
open class QueueOperation: Operation, @unchecked Sendable {
    /// How an operation ended.
    public enum Outcome: Sendable {
        /// The work finished with this result.
        case success((any Sendable)?)
        /// The work failed with this error.
        case failure(any Error)
        /// The operation was canceled (before or while it ran).
        case canceled
    }

    /// The operation type and concurrency limit of the queue this operation runs in.
    public let model: OperationModel
    /// An identifier of the resource the operation works on (for ``JobManager/operations(withResourceIdentifier:)``).
    public let resourceIdentifier: String?

    private let box = Locked(State())

    /// Creates an operation. Subclasses that add stored properties give them defaults or override this
    /// initializer (managers and the default ``JobManager`` create operations through it).
    ///
    /// - Parameters:
    ///   - model: The queue it runs in.
    ///   - resourceIdentifier: What it works on, if anything.
    public required init(model: OperationModel, resourceIdentifier: String? = nil) {
        self.model = model
        self.resourceIdentifier = resourceIdentifier
        super.init()
        name = model.type
    }

    // MARK: - For subclasses

    /// The work. Call `completion` exactly once; extra calls are ignored.
    ///
    /// The default completes at once with no result.
    open func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        completion(.success(nil))
    }

    /// Called once, on the canceling thread, when the operation is canceled while executing. The default
    /// does nothing (the work can also poll `isCancelled`).
    ///
    /// It can arrive before ``execute(completion:)`` is called, when the cancel comes while the
    /// operation is being started: work that is interrupted here should also check `isCancelled` when it
    /// begins. Call `completion` in any case.
    open func operationDidCancel() {}

    /// Reports the fraction of this operation's work that is done (0…1). Cheap; call it as often as you
    /// like: the job aggregates and throttles.
    public func reportProgress(_ fraction: Double) {
        guard let owner = box.withLock({ s in s.phase == .executing ? s.owner : nil }) else { return }
        owner.manager.operation(self, attempt: owner.attempt, index: owner.index, didReportProgress: fraction)
    }

    /// The weight of this operation in the job's aggregated progress (default 1; 0 = not counted).
    ///
    /// Set it in ``JobManager/makeOperations()``, or later, while the operation runs, once it knows how
    /// much of the job's work it does (a step that turns out to do the whole job, say). The job's
    /// progress never goes backwards: a change that would lower it takes effect as the work advances.
    public var progressWeight: Double {
        get { box.withLock { $0.weight } }
        set {
            let owner = box.withLock { s -> Owner? in
                s.weight = newValue
                return s.phase == .finished ? nil : s.owner
            }
            if let owner { owner.manager.operation(self, attempt: owner.attempt, index: owner.index, didChangeWeight: newValue) }
        }
    }

    // MARK: - Relations

    /// The manager running this operation (from when the manager takes it until it finishes).
    public var manager: JobManager? { box.withLock { $0.owner?.manager } }
    /// The job this operation works for (from when the manager takes it until it finishes).
    public var job: Job? { box.withLock { $0.owner?.job } }

    /// Operations that must finish successfully before this one is submitted to its queue.
    public var prerequisites: [QueueOperation] { box.withLock { $0.prerequisites } }

    /// Makes this operation wait for `operation`. Call before this operation is submitted (in
    /// ``JobManager/makeOperations()`` or ``JobManager/operationDidFinish(_:)``).
    public func addPrerequisite(_ operation: QueueOperation) {
        precondition(operation !== self, "an operation cannot wait for itself")
        box.withLock { s in
            if !s.prerequisites.contains(where: { $0 === operation }) { s.prerequisites.append(operation) }
        }
    }

    /// Redirects to ``addPrerequisite(_:)`` for a `QueueOperation` (Foundation dependencies would park the
    /// operation in its queue).
    open override func addDependency(_ operation: Operation) {
        if let queued = operation as? QueueOperation {
            addPrerequisite(queued)
        } else {
            super.addDependency(operation)
        }
    }

    // MARK: - Outcome

    /// How the operation ended, once it did.
    public var outcome: Outcome? { box.withLock { $0.outcome } }
    /// The result, when the operation succeeded.
    public var result: (any Sendable)? {
        if case .success(let value) = outcome { return value }
        return nil
    }
    /// The error, when the operation failed.
    public var error: (any Error)? {
        if case .failure(let error) = outcome { return error }
        return nil
    }

    // MARK: - Foundation.Operation

    /// Always `true`: the work runs until ``execute(completion:)`` calls its completion.
    open override var isAsynchronous: Bool { true }
    /// Whether the work is under way.
    open override var isExecuting: Bool { box.withLock { $0.phase == .executing } }
    /// Whether the operation ended (finished, failed or canceled).
    open override var isFinished: Bool { box.withLock { $0.phase == .finished } }

    /// Called by the operation's queue: runs ``execute(completion:)`` unless the operation or its job was
    /// canceled. Do not call it yourself.
    open override func start() {
        let claim: (claimed: Bool, owner: Owner?) = box.withLock { s in
            guard s.phase == .idle else { return (false, nil) }
            s.phase = .starting
            return (true, s.owner)
        }
        guard claim.claimed else { return }
        guard let owner = claim.owner else {
            finish(.canceled, notify: nil)
            return
        }
        if isCancelled {
            // Canceled on its own before it ran (`cancel()` on it, or its queue's `cancelAllOperations()`):
            // its job is canceled too, or the job would wait for this operation for ever. (When the job
            // itself was canceled first, the manager ignores this.)
            finish(.canceled, notify: owner, didExecute: false)
            return
        }
        guard owner.manager.operationWillExecute(self, attempt: owner.attempt, index: owner.index) else {
            finish(.canceled, notify: nil)
            return
        }
        willChangeValue(forKey: "isExecuting")
        box.withLock { $0.phase = .executing }
        didChangeValue(forKey: "isExecuting")
        if isCancelled {
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

    /// Cancels the operation; an executing one is told at once through ``operationDidCancel()``.
    ///
    /// To stop a job, cancel the job (``Job/cancel()``): it cancels its operations.
    open override func cancel() {
        super.cancel()
        if box.withLock({ $0.phase == .executing }) { signalCancel() }
    }

    private func signalCancel() {
        let first = box.withLock { s -> Bool in
            guard !s.cancelSignaled else { return false }
            s.cancelSignaled = true
            return true
        }
        if first { operationDidCancel() }
    }

    private func complete(_ outcome: Outcome) {
        let canceled = isCancelled
        let final: Outcome = canceled ? .canceled : outcome
        let owner: Owner?? = box.withLock { s in
            guard s.phase == .executing, s.outcome == nil else { return .none }
            s.outcome = final
            return .some(s.owner)
        }
        guard case .some(let bound) = owner else { return }
        finish(final, notify: bound)
    }

    private func finish(_ outcome: Outcome, notify owner: Owner?, didExecute: Bool = true) {
        let wasExecuting = box.withLock { s -> Bool in
            if s.outcome == nil { s.outcome = outcome }
            return s.phase == .executing
        }
        if let owner {
            owner.manager.operationDidComplete(
                self, attempt: owner.attempt, index: owner.index, outcome: outcome, didExecute: didExecute)
        }
        if wasExecuting { willChangeValue(forKey: "isExecuting") }
        willChangeValue(forKey: "isFinished")
        box.withLock { s in
            s.phase = .finished
            s.owner = nil  // the job, its manager and this operation no longer hold each other
        }
        if wasExecuting { didChangeValue(forKey: "isExecuting") }
        didChangeValue(forKey: "isFinished")
    }

    // MARK: - Binding (called by JobManager)

    /// Hands the operation to `manager` for `attempt`, as node `index` of its graph.
    ///
    /// - Returns: false when it already belongs to that attempt (added twice).
    func bind(to manager: JobManager, attempt: Int, index: Int) -> Bool {
        box.withLock { s in
            let place = Place(manager: ObjectIdentifier(manager), attempt: attempt, index: index)
            if let current = s.place, current.manager == place.manager, current.attempt == attempt { return false }
            precondition(
                s.phase == .idle,
                "\(self) already ran: an operation runs once, so makeOperations() must build new ones for each attempt")
            s.owner = Owner(manager: manager, job: manager.job, attempt: attempt, index: index)
            s.place = place
            return true
        }
    }

    /// The operation's index in `manager`'s graph for `attempt`, if it belongs to it.
    func nodeIndex(in manager: JobManager, attempt: Int) -> Int? {
        box.withLock { s in
            guard let place = s.place, place.manager == ObjectIdentifier(manager), place.attempt == attempt else {
                return nil
            }
            return place.index
        }
    }

    /// Lets go of the job and manager of an operation that was never started (its attempt ended).
    func unbindIfIdle() {
        box.withLock { s in if s.phase == .idle { s.owner = nil } }
    }

    /// Strong references, held only while the operation belongs to a live attempt: released when it
    /// finishes, or when its attempt ends before it was submitted.
    private struct Owner {
        let manager: JobManager
        let job: Job
        let attempt: Int
        let index: Int
    }

    /// Where the operation sits in a graph; kept after it finished, so dependents can find it.
    private struct Place {
        let manager: ObjectIdentifier
        let attempt: Int
        let index: Int
    }

    private struct State {
        enum Phase { case idle, starting, executing, finished }
        var phase = Phase.idle
        var owner: Owner?
        var place: Place?
        var prerequisites: [QueueOperation] = []
        var weight: Double = 1
        var outcome: Outcome?
        var cancelSignaled = false
    }
}
