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
        case success((any Sendable)?)
        case failure(any Error)
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
    open func operationDidCancel() {}

    /// Reports the fraction of this operation's work that is done (0…1). Cheap; call it as often as you
    /// like: the job aggregates and throttles.
    public func reportProgress(_ fraction: Double) {
        let owner = box.withLock { s in s.phase == .executing ? s.owner : nil }
        guard let owner, let manager = owner.manager else { return }
        manager.operation(self, attempt: owner.attempt, didReportProgress: fraction)
    }

    /// The weight of this operation in the job's aggregated progress (default 1; 0 = not counted). Set it
    /// before the operation is handed to the manager.
    public var progressWeight: Double {
        get { box.withLock { $0.weight } }
        set { box.withLock { $0.weight = newValue } }
    }

    // MARK: - Relations

    /// The manager running this operation.
    public var manager: JobManager? { box.withLock { $0.owner?.manager } }
    /// The job this operation works for.
    public var job: Job? { manager?.job }

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

    open override var isAsynchronous: Bool { true }
    open override var isExecuting: Bool { box.withLock { $0.phase == .executing } }
    open override var isFinished: Bool { box.withLock { $0.phase == .finished } }

    open override func start() {
        let claim: (claimed: Bool, owner: Owner?) = box.withLock { s in
            guard s.phase == .idle else { return (false, nil) }
            s.phase = .starting
            return (true, s.owner)
        }
        guard claim.claimed else { return }
        guard !isCancelled, let attempt = claim.owner?.attempt, let manager = claim.owner?.manager,
            manager.operationWillExecute(self, attempt: attempt)
        else {
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

    private func finish(_ outcome: Outcome, notify owner: Owner?) {
        let wasExecuting = box.withLock { s -> Bool in
            if s.outcome == nil { s.outcome = outcome }
            return s.phase == .executing
        }
        if let owner, let manager = owner.manager {
            manager.operationDidComplete(self, attempt: owner.attempt, outcome: outcome, didExecute: true)
        }
        if wasExecuting { willChangeValue(forKey: "isExecuting") }
        willChangeValue(forKey: "isFinished")
        box.withLock { $0.phase = .finished }
        if wasExecuting { didChangeValue(forKey: "isExecuting") }
        didChangeValue(forKey: "isFinished")
    }

    // MARK: - Binding (called by JobManager)

    func bind(to manager: JobManager, attempt: Int) {
        box.withLock { s in s.owner = Owner(manager: manager, attempt: attempt) }
    }

    /// Weak, so that a manager and its operations do not keep each other alive.
    private struct Owner {
        weak var manager: JobManager?
        let attempt: Int
    }

    private struct State {
        enum Phase { case idle, starting, executing, finished }
        var phase = Phase.idle
        var owner: Owner?
        var prerequisites: [QueueOperation] = []
        var weight: Double = 1
        var outcome: Outcome?
        var cancelSignaled = false
    }
}
