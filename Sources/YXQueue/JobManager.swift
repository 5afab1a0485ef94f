
/// Turns a ``Job`` into its operations, with dependencies between them, and runs them as a graph.
///
/// The default manager builds one operation of the job's ``Job/operationType``. Subclass it when a job
/// needs several operations: override ``makeOperations()`` and wire prerequisites with
/// ``QueueOperation/addPrerequisite(_:)``. An operation enters its `OperationQueue` only when all its
/// prerequisites have finished successfully (operations parked in a queue make Foundation's scheduling
/// quadratic). When an operation fails or is canceled, the job fails or is canceled and the operations
/// that did not run yet never run.
///
/// ```swift
/// final class ResizeManager: JobManager {
///     override func makeOperations() -> [QueueOperation] {
///         let load = LoadOperation(model: .init(type: "io", maxConcurrentOperationCount: 4))
///         let small = ResizeOperation(model: .init(type: "cpu", maxConcurrentOperationCount: 2))
///         let large = ResizeOperation(model: .init(type: "cpu", maxConcurrentOperationCount: 2))
///         small.addPrerequisite(load)
///         large.addPrerequisite(load)
///         return [load, small, large]
///     }
/// }
/// ```
///
/// The graph may grow while the job runs: ``operationDidFinish(_:)`` is called before the dependents of
/// the finished operation are considered, so it can ``addOperations(_:)`` and add prerequisites to
/// operations that have not been submitted yet (for example: a probe decides how many parts a download
/// gets, and the finalize step waits for all of them).
///
/// - Note: A job has one manager for its whole life; each attempt (a start or restart) builds a fresh set
///   of operations. A new attempt begins only after the operations of the previous one stopped executing.
open class JobManager: @unchecked Sendable {
    /// The job this manager runs. The job owns its manager.
    public unowned let job: Job

    private let graph = Locked(Graph())

    /// Creates the manager of a job (called by the job when it is first started).
    public required init(job: Job) {
        self.job = job
    }

    // MARK: - Overridable

    /// Builds the operations of one attempt, with their prerequisites.
    ///
    /// Called once per attempt, outside any lock. The default returns one operation of the job's
    /// ``Job/operationType`` with the job's ``Job/operationModel``.
    open func makeOperations() -> [QueueOperation] {
        let operationType = type(of: job).operationType
        return [operationType.init(model: job.operationModel)]
    }

    /// Called after `operation` finished successfully, before its dependents are submitted.
    ///
    /// Override to extend the graph with ``addOperations(_:)``. Called on the thread that completed the
    /// operation; the default does nothing.
    open func operationDidFinish(_ operation: QueueOperation) {}

    /// The job's result once every operation finished (default: the result of the last operation to
    /// finish).
    ///
    /// - Parameter finishedOperations: The operations in the order they finished.
    open func makeResult(finishedOperations: [QueueOperation]) -> (any Sendable)? {
        finishedOperations.last?.result
    }

    // MARK: - Graph access

    /// The operations of the current (or last) attempt.
    public var operations: [QueueOperation] { graph.withLock { g in g.nodes.map(\.operation) } }

    /// The operations of the current attempt whose ``QueueOperation/resourceIdentifier`` is `identifier`.
    public func operations(withResourceIdentifier identifier: String) -> [QueueOperation] {
        operations.filter { $0.resourceIdentifier == identifier }
    }

    /// Adds operations to the running attempt. Their prerequisites must be operations of the job.
    ///
    /// Does nothing when no attempt is running.
    public func addOperations(_ operations: [QueueOperation]) {
        let attempt: Int? = graph.withLock { g in
            guard g.isLive else { return nil }
            for operation in operations { g.insert(operation, manager: self) }
            return g.attempt
        }
        if let attempt { advance(attempt: attempt) }
    }

    // MARK: - Control (the original's cancel, drop, pause, restart)

    /// Cancels the job; see ``Job/cancel()``.
    public func cancel() { job.cancel() }
    /// Drops the job; see ``Job/drop()``.
    public func drop() { job.drop() }
    /// Stops the job's work the way cancel does; ``restart()`` resumes it with a new attempt (operations
    /// that keep their partial work, such as a download's `.part` file, continue from there).
    public func pause() { job.cancel() }
    /// Begins a new attempt of a canceled, paused or failed job.
    @discardableResult
    public func restart() -> Bool { job.restart() }

    // MARK: - Driving an attempt (called by Job and QueueOperation)

    func begin(attempt: Int, dispatcher: Dispatcher) {
        let mustWait = graph.withLock { g -> Bool in
            guard g.executing > 0 else { return false }
            g.deferredBegin = (attempt, dispatcher)
            return true
        }
        if mustWait { return }
        guard job.isCurrent(attempt: attempt) else { return }
        let operations = makeOperations()
        let previous = graph.withLock { g in
            let previous = g.reset(attempt: attempt, dispatcher: dispatcher)
            for operation in operations { g.insert(operation, manager: self) }
            return previous
        }
        for operation in previous { operation.unbindIfIdle() }
        advance(attempt: attempt)
    }

    /// Submits every operation whose prerequisites have all finished; ends the attempt when all finished
    /// or when the graph cannot make progress.
    private func advance(attempt: Int) {
        enum Step { case nothing, submit([QueueOperation], Dispatcher), finish([QueueOperation]), fail(JobError) }
        let step: Step = graph.withLock { g in
            guard g.isLive, g.attempt == attempt, let dispatcher = g.dispatcher else { return .nothing }
            if g.finishedCount == g.nodes.count {
                g.isLive = false
                return .finish(g.finishOrder())
            }
            var ready: [QueueOperation] = []
            var invalid: String?
            g.pending.removeAll { index in
                let node = g.nodes[index]
                var satisfied = true
                for prerequisite in node.operation.prerequisites {
                    guard let other = prerequisite.nodeIndex(in: self, attempt: attempt) else {
                        invalid = "\(node.operation) waits for \(prerequisite), which is not part of the job"
                        return false
                    }
                    if !g.nodes[other].isFinished { satisfied = false }
                }
                if satisfied { ready.append(node.operation) }
                return satisfied
            }
            if let invalid {
                g.isLive = false
                return .fail(.invalidOperationGraph(invalid))
            }
            g.inFlight += ready.count
            if ready.isEmpty && g.inFlight == 0 && !g.pending.isEmpty {
                g.isLive = false
                return .fail(.invalidOperationGraph("the prerequisites of \(g.pending.count) operations form a cycle"))
            }
            return ready.isEmpty ? .nothing : .submit(ready, dispatcher)
        }
        switch step {
        case .nothing:
            break
        case .submit(let operations, let dispatcher):
            for operation in operations { dispatcher.enqueue(operation) }
        case .finish(let finished):
            job.finish(result: makeResult(finishedOperations: finished), attempt: attempt)
        case .fail(let error):
            job.fail(error, attempt: attempt)
        }
    }

    /// Called by an operation's `start()`; returns whether it may execute.
    func operationWillExecute(_ operation: QueueOperation, attempt: Int, index: Int) -> Bool {
        let admitted = graph.withLock { g -> Bool in
            guard g.isLive, g.attempt == attempt else { return false }
            g.executing += 1
            return true
        }
        guard admitted else { return false }
        guard job.isCurrent(attempt: attempt) else {
            operationDidComplete(operation, attempt: attempt, index: index, outcome: .canceled, didExecute: true)
            return false
        }
        job.markExecuting(attempt: attempt)
        return true
    }

    func operation(_ operation: QueueOperation, attempt: Int, index: Int, didReportProgress fraction: Double) {
        let aggregate: Double? = graph.withLock { g in
            guard g.isLive, g.attempt == attempt else { return nil }
            return g.setProgress(fraction, of: index)
        }
        if let aggregate { job.updateProgress(aggregate, attempt: attempt) }
    }

    func operation(_ operation: QueueOperation, attempt: Int, index: Int, didChangeWeight weight: Double) {
        let aggregate: Double? = graph.withLock { g in
            guard g.isLive, g.attempt == attempt, index < g.nodes.count, g.nodes[index].operation === operation else {
                return nil
            }
            return g.setWeight(max(0, weight), of: index)
        }
        if let aggregate { job.updateProgress(aggregate, attempt: attempt) }
    }

    func operationDidComplete(
        _ operation: QueueOperation,
        attempt: Int,
        index: Int,
        outcome: QueueOperation.Outcome,
        didExecute: Bool
    ) {
        enum Action { case none, succeeded(Double), failed(any Error), canceled }
        var deferred: (Int, Dispatcher)?
        let action: Action = graph.withLock { g in
            if didExecute {
                g.executing -= 1
                if g.executing == 0 {
                    deferred = g.deferredBegin
                    g.deferredBegin = nil
                }
            }
            guard g.isLive, g.attempt == attempt, index < g.nodes.count, g.nodes[index].operation === operation else {
                return .none
            }
            g.inFlight -= 1
            switch outcome {
            case .success:
                let aggregate = g.setProgress(1, of: index)
                g.finishedCount += 1
                g.nodes[index].finishSequence = g.finishedCount
                return .succeeded(aggregate)
            case .failure(let error):
                g.isLive = false
                return .failed(error)
            case .canceled:
                g.isLive = false
                return .canceled
            }
        }
        switch action {
        case .none:
            break
        case .succeeded(let aggregate):
            job.updateProgress(aggregate, attempt: attempt)
            operationDidFinish(operation)
            advance(attempt: attempt)
        case .failed(let error):
            job.fail(error, attempt: attempt)
        case .canceled:
            job.cancelFromOperation(attempt: attempt)
        }
        if let (nextAttempt, dispatcher) = deferred {
            begin(attempt: nextAttempt, dispatcher: dispatcher)
        }
    }

    /// The job's attempt ended (any terminal state): cancel whatever of it is still queued or running,
    /// and let the operations that were never submitted go.
    func attemptDidEnd(_ attempt: Int) {
        let (unfinished, unsubmitted): ([QueueOperation], [QueueOperation]) = graph.withLock { g in
            guard g.attempt == attempt else { return ([], []) }
            g.isLive = false
            let unsubmitted = g.pending.map { g.nodes[$0].operation }
            g.pending.removeAll()
            return (g.nodes.filter { !$0.isFinished }.map(\.operation), unsubmitted)
        }
        for operation in unfinished { operation.cancel() }
        for operation in unsubmitted { operation.unbindIfIdle() }
    }

    /// The graph of one attempt, behind the manager's lock. Nodes are found by index; an operation
    /// knows its index from its binding.
    private struct Graph {
        struct Node {
            let operation: QueueOperation
            var weight: Double
            var progress: Double = 0
            /// 1 for the first operation to finish, 2 for the next, …; 0 while unfinished.
            var finishSequence = 0
            var isFinished: Bool { finishSequence > 0 }
        }

        var attempt = 0
        var isLive = false
        var dispatcher: Dispatcher?
        var nodes: [Node] = []
        var pending: [Int] = []
        var inFlight = 0
        var finishedCount = 0
        var totalWeight: Double = 0
        var weightedProgress: Double = 0
        /// Operations inside `execute` (of any attempt).
        var executing = 0
        var deferredBegin: (Int, Dispatcher)?

        /// Starts a new attempt; returns the previous attempt's operations.
        mutating func reset(attempt: Int, dispatcher: Dispatcher) -> [QueueOperation] {
            let previous = nodes.map(\.operation)
            self.attempt = attempt
            self.dispatcher = dispatcher
            isLive = true
            nodes = []
            pending = []
            inFlight = 0
            finishedCount = 0
            totalWeight = 0
            weightedProgress = 0
            return previous
        }

        mutating func insert(_ operation: QueueOperation, manager: JobManager) {
            let index = nodes.count
            guard operation.bind(to: manager, attempt: attempt, index: index) else { return }
            let node = Node(operation: operation, weight: max(0, operation.progressWeight))
            nodes.append(node)
            pending.append(index)
            totalWeight += node.weight
        }

        func finishOrder() -> [QueueOperation] {
            nodes.sorted { $0.finishSequence < $1.finishSequence }.map(\.operation)
        }

        /// Sets one operation's progress and returns the weighted aggregate.
        mutating func setWeight(_ weight: Double, of index: Int) -> Double {
            totalWeight += weight - nodes[index].weight
            weightedProgress += (weight - nodes[index].weight) * nodes[index].progress
            nodes[index].weight = weight
            return totalWeight > 0 ? weightedProgress / totalWeight : 0
        }

        mutating func setProgress(_ fraction: Double, of index: Int) -> Double {
            let clamped = min(1, max(0, fraction))
            weightedProgress += nodes[index].weight * (clamped - nodes[index].progress)
            nodes[index].progress = clamped
            return totalWeight > 0 ? weightedProgress / totalWeight : 0
        }
    }
}
