import Dispatch
import Foundation
/// Turns a ``Job`` into its operations, with dependencies between them, and runs them as a graph.
///
/// The default manager builds one operation of the job's ``Job/operationClass``. Subclass it when a job
/// needs several operations: override ``makeOperations()`` and wire prerequisites with
/// ``QueueOperation/addPrerequisite(_:)``. An operation enters its `OperationQueue` only when all its
/// prerequisites have finished successfully (operations parked in a queue make Foundation's scheduling
/// quadratic). When an operation fails or is canceled, the job fails or is canceled and the operations
/// that did not run yet never run.
///
/// ```swift
/// final class ResizeManager: JobManager, @unchecked Sendable {
///     override func makeOperations() -> [QueueOperation] {
///         let load = LoadOperation(queue: "io")
///         let small = ResizeOperation(queue: "cpu")
///         let large = ResizeOperation(queue: "cpu")
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

    /// The job's state, whose lock also guards this manager's graph (``Job/Core/graph``): one lock and
    /// one allocation per job, not two. Never call into the job while holding it.
    private let core: StripedLocked<Job.Core>

    /// The latest attempt the job ended (that the manager was told of). Read and written only with the
    /// job's state locked (no run-time exclusivity check is needed, nor made). Here, not in the graph:
    /// the graph then fits in the allocator's smallest chunks (see ``GraphBox``).
    @exclusivity(unchecked) private var lockedEndedAttempt = 0

    /// Creates the manager of a job (called by the job when it is first started).
    public required init(job: Job) {
        self.job = job
        self.core = job.core
    }

    /// Runs `body` with the graph, under the job's lock.
    private func withGraph<Result>(_ body: (inout Graph) throws -> Result) rethrows -> Result {
        try core.withLock { try body(&$0.graph.value) }
    }

    // MARK: - Overridable

    /// Builds the operations of one attempt, with their prerequisites.
    ///
    /// Called once per attempt (and once per retry), outside any lock. The default returns one operation
    /// of the job's ``Job/operationClass`` on the job's ``Job/queue``.
    open func makeOperations() -> [QueueOperation] {
        [defaultOperation()]
    }

    /// The one operation of the default `makeOperations()`.
    private func defaultOperation() -> QueueOperation {
        type(of: job).operationClass.init(queue: job.queue)
    }

    /// The operations of one attempt: what ``makeOperations()`` builds. A manager that knows it builds
    /// exactly one returns it without an array: the base class (whose `makeOperations()` a subclass may
    /// override, so only for exactly `JobManager`), and a typed definition of one body.
    func makeAttemptOperations() -> AttemptOperations {
        type(of: self) == JobManager.self ? .one(defaultOperation()) : .many(makeOperations())
    }

    /// The operations of one attempt (see ``makeAttemptOperations()``), or those it finished, in the
    /// order they finished.
    enum AttemptOperations {
        case one(QueueOperation)
        case many([QueueOperation])

        /// The first operation (of those finished: the first to finish).
        var first: QueueOperation? {
            switch self {
            case .one(let operation): operation
            case .many(let operations): operations.first
            }
        }

        /// The last operation (of those finished: the last to finish).
        var last: QueueOperation? {
            switch self {
            case .one(let operation): operation
            case .many(let operations): operations.last
            }
        }
    }

    /// Whether ``operationDidFinish(_:)`` may do something: not for this class's own, which does nothing,
    /// nor for typed definitions' manager. Without one, the graph's next step is taken under the same lock
    /// as the operation's end.
    var hasOperationDidFinishHook: Bool { type(of: self) != JobManager.self }

    /// Whether the job's result, when its graph is one operation, is that operation's result: for this
    /// class's own ``makeResult(finishedOperations:)``, and for typed definitions' manager.
    var resultOfOneOperationIsItsOwn: Bool { type(of: self) == JobManager.self }

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

    /// The job's result once every operation of the attempt finished: `makeResult(finishedOperations:)`,
    /// without an array of one where the class is exactly `JobManager` (no override to call).
    func makeResult(of finished: AttemptOperations) -> (any Sendable)? {
        switch finished {
        case .one(let operation) where type(of: self) == JobManager.self: operation.result
        case .one(let operation): makeResult(finishedOperations: [operation])
        case .many(let operations): makeResult(finishedOperations: operations)
        }
    }

    // MARK: - Graph access

    /// The operations of the current (or last) attempt.
    public var operations: [QueueOperation] { withGraph { g in g.nodes.map(\.operation) } }

    /// Whether a begin waits for operations of an earlier set to stop executing (for tests).
    var hasDeferredBegin: Bool { withGraph { $0.deferredBegin != nil } }

    /// The first operation of the current (or last) attempt, without the array of ``operations``.
    var firstOperation: QueueOperation? { withGraph { g in g.nodes.first?.operation } }

    /// The operations of the current attempt whose ``QueueOperation/resourceIdentifier`` is `identifier`.
    public func operations(withResourceIdentifier identifier: String) -> [QueueOperation] {
        operations.filter { $0.resourceIdentifier == identifier }
    }

    /// Adds operations to the running attempt. Their prerequisites must be operations of the job.
    ///
    /// Does nothing when no attempt is running.
    public func addOperations(_ operations: [QueueOperation]) {
        let step: (attempt: Int, invalid: String?)? = withGraph { g in
            guard g.isLive else { return nil }
            // Operations that wait for one of a set a retry replaced (added from that operation's
            // `operationDidFinish`, while another thread began the retry) extend a set that is over.
            let extendsReplacedSet = operations.contains { $0.prerequisites.contains { g.isReplaced($0, manager: self) } }
            if extendsReplacedSet { return nil }
            var invalid: String?
            for operation in operations {
                if let problem = g.insert(operation, manager: self) { invalid = invalid ?? problem }
            }
            if invalid != nil { g.isLive = false }
            return (g.attempt, invalid)
        }
        guard let step else { return }
        if let invalid = step.invalid {
            job.fail(JobError.invalidOperationGraph(invalid), attempt: step.attempt)
        } else {
            advance(attempt: step.attempt, handedOver: false)
        }
    }

    // MARK: - Control (the original's cancel, drop and restart)

    /// Cancels the job; see ``Job/cancel()``.
    public func cancel() { job.cancel() }
    /// Drops the job; see ``Job/drop()``.
    public func drop() { job.drop() }
    /// Begins a new attempt of a canceled or failed job; see ``Job/restart()``. Operations that keep
    /// their partial work (a download's `.part` file) continue from there.
    @discardableResult
    public func restart() -> Bool { job.restart() }

    // MARK: - Driving an attempt (called by Job and QueueOperation)

    /// Begins `attempt` (or, with `isRetry`, tries its work again): builds the operations and submits
    /// those that are ready. Waits for operations of an earlier set that still execute.
    ///
    /// - Parameter isFresh: the manager was made for this attempt: no operation of it ever executed, so
    ///   there is nothing to wait for.
    func begin(attempt: Int, dispatcher: Dispatcher, isRetry: Bool = false, isFresh: Bool = false) {
        let mustWait = !isFresh && withGraph { g -> Bool in
            guard g.executing > 0 else { return false }
            // A begin that comes late (its attempt ended, or a newer one began: from a thread that was
            // held between the job's start and this call, or a retry timer already running when the
            // attempt was canceled) is dropped: taking the place of the newer one's deferred begin would
            // leave that attempt without operations, active for ever.
            if g.isStale(attempt: attempt, isRetry: isRetry, endedAttempt: lockedEndedAttempt) { return true }
            if let waiting = g.deferredBegin, waiting.attempt > attempt { return true }
            g.deferredBegin = DeferredBegin(attempt: attempt, dispatcher: dispatcher, isRetry: isRetry)
            return true
        }
        if mustWait { return }
        guard job.isCurrent(attempt: attempt) else { return }
        let operations = makeAttemptOperations()
        // The operations go in, and those without prerequisites are taken, under one lock. The dispatcher
        // of the graph's last attempt is released after it (its last reference may take user code with it).
        var previousDispatcher: Dispatcher?
        defer { withExtendedLifetime(previousDispatcher) {} }
        let begun = withGraph { g -> (previous: [QueueOperation], invalid: String?, step: Step)? in
            // The graph never goes back to an earlier attempt, nor to one that ended. While this call built
            // its operations, the attempt may have ended (a cancel, its deadline) and a newer one begun
            // (a restart from another thread): resetting the graph to this attempt then would orphan the
            // newer one, whose operations' ends the graph would ignore, and the job would never end; or,
            // with no newer attempt, it would keep the ended job bound to operations that never run.
            // This set is dropped unbound.
            guard !g.isStale(attempt: attempt, isRetry: isRetry, endedAttempt: lockedEndedAttempt) else { return nil }
            if g.dispatcher !== dispatcher { previousDispatcher = g.dispatcher }
            let previous = g.reset(attempt: attempt, dispatcher: dispatcher, keepingRetries: isRetry)
            var invalid: String?
            switch operations {
            case .one(let operation):
                invalid = g.insert(operation, manager: self)
            case .many(let operations):
                for operation in operations {
                    if let problem = g.insert(operation, manager: self) { invalid = invalid ?? problem }
                }
            }
            if invalid != nil {
                g.isLive = false
                return (previous, invalid, .nothing)
            }
            return (previous, nil, g.step(manager: self, attempt: attempt))
        }
        guard let (previous, invalid, step) = begun else { return }
        for operation in previous { operation.unbindIfIdle() }
        if let invalid {
            job.fail(JobError.invalidOperationGraph(invalid), attempt: attempt)
            return
        }
        if !isRetry, let deadline = job.deadline { armDeadline(deadline, attempt: attempt) }
        perform(step, attempt: attempt, handedOver: false)
    }

    /// Fails the attempt when it runs past `deadline`.
    private func armDeadline(_ deadline: Duration, attempt: Int) {
        let timer = DispatchWorkItem { [weak self] in
            self?.job.fail(JobError.deadlineExceeded(deadline), attempt: attempt)
        }
        let armed = withGraph { g -> Bool in
            guard g.attempt == attempt, g.isLive else { return false }
            g.timers.append(timer)
            return true
        }
        if armed { DispatchQueue.global().asyncAfter(deadline: .now() + deadline.timeInterval, execute: timer) }
    }

    /// Submits every operation whose prerequisites have all finished; ends the attempt when all finished
    /// or when the graph cannot make progress.
    ///
    /// - Parameter handedOver: whether this runs on the thread that just completed an operation (see
    ///   ``WorkQueue/submit(_:handedOver:)``).
    private func advance(attempt: Int, handedOver: Bool) {
        perform(withGraph { g in g.step(manager: self, attempt: attempt) }, attempt: attempt, handedOver: handedOver)
    }

    /// What the graph asks for next (see ``Graph/step(manager:attempt:)``).
    fileprivate enum Step {
        case nothing
        /// One ready operation: the common case, without an array.
        case submitOne(QueueOperation, Dispatcher)
        case submit([QueueOperation], Dispatcher)
        /// Every operation finished (in this order; one without an array); the attempt's timers, which
        /// the graph no longer holds, are to be canceled.
        case finish(AttemptOperations, timers: [DispatchWorkItem])
        case fail(JobError)
    }

    private func perform(_ step: Step, attempt: Int, handedOver: Bool) {
        switch step {
        case .nothing:
            break
        case .submitOne(let operation, let dispatcher):
            dispatcher.submit(operation, handedOver: handedOver)
        case .submit(let operations, let dispatcher):
            dispatcher.submit(operations, handedOver: handedOver)
        case .finish(let finished, let timers):
            for timer in timers { timer.cancel() }
            // Nothing of the graph is left to stop: the job's end need not visit it again.
            job.finish(result: makeResult(of: finished), attempt: attempt, graphSettled: true)
        case .fail(let error):
            job.fail(error, attempt: attempt)
        }
    }

    /// Called by an operation's `start()`; returns whether it may execute.
    func operationWillExecute(_ operation: QueueOperation, attempt: Int, index: Int) -> Bool {
        switch job.admitOperation(attempt: attempt) {
        case .refused:
            return false
        case .admitted:
            return true
        case .attemptEnded:
            operationDidComplete(operation, attempt: attempt, index: index, outcome: .canceled, didExecute: true)
            return false
        }
    }

    func operation(_ operation: QueueOperation, attempt: Int, index: Int, didReportProgress fraction: Double) {
        let aggregate: Double? = withGraph { g in
            // The node must be this operation: a retry replaces the set within the same attempt, and an
            // operation of the old set may still report.
            guard g.isLive, g.attempt == attempt, index < g.nodes.count, g.nodes[index].operation === operation else {
                return nil
            }
            return g.setProgress(fraction, of: index)
        }
        if let aggregate { job.updateProgress(aggregate, attempt: attempt) }
    }

    func operation(_ operation: QueueOperation, attempt: Int, index: Int, didChangeWeight weight: Double) {
        let aggregate: Double? = withGraph { g in
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
        enum Action {
            case none
            /// With the graph's next step when no `operationDidFinish` override must run first.
            case succeeded(Double?, Step?)
            /// The job's only operation succeeded, and its result is the job's: the job ends now.
            case finishesAlone
            /// The job ended under the same lock (see `finishesAlone`).
            case ended(Job.Ending?)
            case failed(any Error)
            case retry(any Error, TimeInterval)
            case canceled
        }
        let stepsAtOnce = !hasOperationDidFinishHook
        let endsAlone = stepsAtOnce && resultOfOneOperationIsItsOwn
        var deferred: DeferredBegin?
        // The outcome is taken apart once: it holds an existential, and each copy of it goes through the
        // runtime's value witnesses. The value is copied only for a job that may end here with it.
        enum Kind { case success, failure, canceled }
        let kind: Kind
        var value: (any Sendable)?
        var failure: (any Error)?
        switch outcome {
        case .success(let result):
            kind = .success
            if endsAlone { value = result }
        case .failure(let error):
            kind = .failure
            failure = error
        case .canceled:
            kind = .canceled
        }
        // What a failure asks of the retry policy is read here, before the lock: the error's
        // `isTransient` and `retryAfter` are its own code, which may call back into this manager.
        var failureAsk: (policy: RetryPolicy, ask: RetryPolicy.FailureAsk)?
        if let failure {
            let policy = job.retryPolicy
            if policy.retries > 0 { failureAsk = (policy, policy.ask(of: failure)) }
        }
        let job = self.job
        func complete(_ g: inout Graph) -> Action {
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
            switch kind {
            case .success:
                let aggregate = g.setProgress(1, of: index)
                g.finishedCount += 1
                let sequence = g.finishedCount
                g.nodes.update(at: index) { $0.finishSequence = sequence }
                if endsAlone && g.nodes.count == 1 && g.timers.isEmpty {
                    g.isLive = false
                    return .finishesAlone
                }
                // The last one: the job's end reports 1 (unless the graph grows, and then later).
                let progress = g.finishedCount == g.nodes.count ? nil : aggregate
                return .succeeded(progress, stepsAtOnce ? g.step(manager: self, attempt: attempt) : nil)
            case .failure:
                g.isLive = false
                guard let error = failure else { return .none }
                if let failureAsk,
                    let delay = failureAsk.policy.delay(answering: failureAsk.ask, retriesUsed: g.retriesUsed)
                {
                    g.retriesUsed += 1
                    return .retry(error, delay)
                }
                return .failed(error)
            case .canceled:
                g.isLive = false
                return .canceled
            }
        }
        // A job of one operation whose result is its own (most jobs) ends under the same lock: the graph
        // is in the job's state.
        let action: Action = core.withLock { s in
            let action = complete(&s.graph.value)
            guard case .finishesAlone = action else { return action }
            return .ended(job.end(&s, to: .finished, attempt: attempt, result: value))
        }
        switch consume action {
        case .none, .finishesAlone:
            break
        case .ended(let ending):
            if let ending { job.completeEnd(ending, graphSettled: true) }
        case .succeeded(let aggregate, let step):
            if let aggregate { job.updateProgress(aggregate, attempt: attempt) }
            if let step {
                perform(step, attempt: attempt, handedOver: true)
            } else {
                operationDidFinish(operation)
                advance(attempt: attempt, handedOver: true)
            }
        case .failed(let error):
            job.fail(error, attempt: attempt)
        case .retry(let error, let delay):
            scheduleRetry(after: delay, error: error, attempt: attempt)
        case .canceled:
            job.cancelFromOperation(attempt: attempt)
        }
        if let deferred {
            begin(attempt: deferred.attempt, dispatcher: deferred.dispatcher, isRetry: deferred.isRetry)
        }
    }

    /// Stops what is left of the failed set of operations, and builds a new set after `delay` (no queue
    /// slot is held meanwhile). The attempt goes on: the job stays executing.
    private func scheduleRetry(after delay: TimeInterval, error: any Error, attempt: Int) {
        job.willRetry(after: .seconds(delay), error: error, attempt: attempt)
        let timer = DispatchWorkItem { [weak self] in
            guard let self, let dispatcher = self.withGraph({ $0.dispatcher }) else { return }
            self.begin(attempt: attempt, dispatcher: dispatcher, isRetry: true)
        }
        let unfinished: [QueueOperation] = withGraph { g in
            guard g.attempt == attempt else { return [] }
            g.timers.append(timer)
            g.clearPending()
            return g.nodes.filter { !$0.isFinished }.map(\.operation)
        }
        for operation in unfinished { operation.cancel() }
        DispatchQueue.global().asyncAfter(deadline: .now() + delay, execute: timer)
    }

    /// The job's attempt ended (any terminal state): cancel whatever of it is still queued or running,
    /// and let the operations that were never submitted go.
    func attemptDidEnd(_ attempt: Int) {
        let (unfinished, unsubmitted, timers): ([QueueOperation], [QueueOperation], [DispatchWorkItem]) =
            withGraph { g in
                lockedEndedAttempt = max(lockedEndedAttempt, attempt)
                guard g.attempt == attempt else { return ([], [], []) }
                g.isLive = false
                let unsubmitted = g.pendingCount == 0 ? [] : g.nodes.filter(\.isPending).map(\.operation)
                g.clearPending()
                return (g.nodes.filter { !$0.isFinished }.map(\.operation), unsubmitted, g.takeTimers())
            }
        for timer in timers { timer.cancel() }
        for operation in unfinished { operation.cancel() }
        for operation in unsubmitted { operation.unbindIfIdle() }
    }

    /// An attempt (or a retry) that begins once the operations of the previous set stopped executing.
    /// A class, so that the graph of the many jobs that never need one carries a pointer, not 25 bytes.
    final class DeferredBegin: Sendable {
        let attempt: Int
        let dispatcher: Dispatcher
        let isRetry: Bool
        init(attempt: Int, dispatcher: Dispatcher, isRetry: Bool) {
            self.attempt = attempt
            self.dispatcher = dispatcher
            self.isRetry = isRetry
        }
    }

    /// The graph of a job, in an object of its own that the job's state holds (``Job/Core/graph``), under
    /// the job's lock: at most 104 bytes, so that with its header it is one of the allocator's smallest
    /// chunks (see ``StripedLocked``). `JobLayoutTests` checks the size.
    final class GraphBox {
        /// Touched only under the job's lock: no run-time exclusivity check is needed, nor made.
        @exclusivity(unchecked) var value = Graph()
    }

    /// The graph of one attempt, behind the job's lock. Nodes are found by index; an operation
    /// knows its index from its binding.
    ///
    /// Counts of operations are kept in 32 bits (a graph has fewer operations than that), and what few
    /// jobs use (a deferred begin, timers, retries) in a box made on first use.
    struct Graph {
        struct Node {
            let operation: QueueOperation
            var weight: Double
            var progress: Double = 0
            /// 1 for the first operation to finish, 2 for the next, …; 0 while unfinished.
            @Int32Stored var finishSequence = 0
            /// Not submitted yet: waits for its prerequisites.
            var isPending = true

            var isFinished: Bool { finishSequence > 0 }
        }

        var attempt = 0
        var dispatcher: Dispatcher?
        /// The operations of the attempt, by index; the first in place (a job of one operation
        /// allocates no array for its graph).
        var nodes = InlineFirstList<Node>()
        /// How many nodes are pending (a count, not a list: a job of one operation allocates nothing
        /// for it).
        @Int32Stored var pendingCount = 0
        @Int32Stored var inFlight = 0
        @Int32Stored var finishedCount = 0
        /// Operations inside `execute` (of any attempt).
        @Int32Stored var executing = 0
        /// Whether the set of operations can still make progress.
        var isLive = false
        var totalWeight: Double = 0
        var weightedProgress: Double = 0
        private var rare: Rare?

        /// An attempt (or a retry) that waits for `executing` to reach 0.
        var deferredBegin: DeferredBegin? {
            get { rare?.deferredBegin }
            set { if newValue != nil || rare != nil { madeRare().deferredBegin = newValue } }
        }
        /// Retries made in this attempt.
        var retriesUsed: Int {
            get { rare?.retriesUsed ?? 0 }
            set { if newValue != 0 || rare != nil { madeRare().retriesUsed = newValue } }
        }
        /// The attempt's deadline and a pending retry, canceled when the attempt ends.
        var timers: [DispatchWorkItem] {
            get { rare?.timers ?? [] }
            _modify { yield &madeRare().timers }
        }

        /// The timers, which the graph no longer holds.
        mutating func takeTimers() -> [DispatchWorkItem] {
            guard let rare, !rare.timers.isEmpty else { return [] }
            defer { rare.timers = [] }
            return rare.timers
        }

        private mutating func madeRare() -> Rare {
            if let rare { return rare }
            let made = Rare()
            rare = made
            return made
        }

        /// Touched only under the job's lock, like the rest of the graph.
        private final class Rare {
            @exclusivity(unchecked) var deferredBegin: DeferredBegin?
            @exclusivity(unchecked) var retriesUsed = 0
            @exclusivity(unchecked) var timers: [DispatchWorkItem] = []
        }

        /// Whether `operation` belongs to an earlier set of operations of this attempt (one a retry
        /// replaced): bound to this attempt, at a node that now holds another operation.
        func isReplaced(_ operation: QueueOperation, manager: JobManager) -> Bool {
            guard let index = operation.nodeIndex(in: manager, attempt: attempt) else { return false }
            return index >= nodes.count || nodes[index].operation !== operation
        }

        /// Whether a begin of `attempt` comes too late: the attempt ended, or the graph is at a later
        /// one (or already at this one, for a begin that is not a retry).
        func isStale(attempt: Int, isRetry: Bool, endedAttempt: Int) -> Bool {
            attempt <= endedAttempt || attempt < self.attempt || (attempt == self.attempt && !isRetry)
        }

        /// Starts a new attempt, or a retry of this one; returns the previous set of operations.
        mutating func reset(attempt: Int, dispatcher: Dispatcher, keepingRetries: Bool) -> [QueueOperation] {
            let previous = nodes.map(\.operation)
            if !keepingRetries { retriesUsed = 0 }
            self.attempt = attempt
            self.dispatcher = dispatcher
            isLive = true
            nodes.removeAll()
            pendingCount = 0
            inFlight = 0
            finishedCount = 0
            totalWeight = 0
            weightedProgress = 0
            return previous
        }

        /// Adds an operation; returns a description of the problem when it cannot be added.
        mutating func insert(_ operation: QueueOperation, manager: JobManager) -> String? {
            let index = nodes.count
            var result = operation.bind(to: manager, attempt: attempt, index: index)
            if case .alreadyBound = result, isReplaced(operation, manager: manager) {
                // Built again for a retry: it belongs to the set the retry replaced, not to this one. It
                // joins this set if it never ran.
                result = operation.bind(to: manager, attempt: attempt, index: index, movingFromReplacedSet: true)
            }
            switch result {
            case .alreadyBound:
                return nil
            case .alreadyRan:
                // `.description`, not the operation itself: interpolating a value may run its own code (a
                // `TextOutputStreamable` conformance), and this runs under the job's lock.
                return "\(operation.description) already ran: an operation runs once, "
                    + "so makeOperations() must build new ones"
            case .added(let weight):
                let node = Node(operation: operation, weight: max(0, weight))
                nodes.append(node)
                pendingCount += 1
                totalWeight += node.weight
                return nil
            }
        }

        /// Nothing pending is submitted any more (the attempt, or this set of operations, is over).
        mutating func clearPending() {
            guard pendingCount > 0 else { return }
            for index in nodes.indices { nodes.update(at: index) { $0.isPending = false } }
            pendingCount = 0
        }

        /// Takes the pending operations whose prerequisites all finished; or ends the attempt when every
        /// operation finished, or when the graph cannot make progress.
        fileprivate mutating func step(manager: JobManager, attempt: Int) -> Step {
            guard isLive, self.attempt == attempt, let dispatcher else { return .nothing }
            if finishedCount == nodes.count {
                isLive = false
                let taken = takeTimers()
                if nodes.count == 1 { return .finish(.one(nodes[0].operation), timers: taken) }
                return .finish(.many(finishOrder()), timers: taken)
            }
            guard pendingCount > 0 else { return .nothing }
            // Found first, taken after: a graph found invalid leaves its pending operations pending, so
            // that the attempt's end lets go of them.
            var firstReady: Int?
            var moreReady: [Int] = []
            for index in nodes.indices where nodes[index].isPending {
                var satisfied = true
                for prerequisite in nodes[index].operation.prerequisites {
                    guard let other = prerequisite.nodeIndex(in: manager, attempt: attempt), other < nodes.count,
                        nodes[other].operation === prerequisite
                    else {
                        isLive = false
                        let waiting = nodes[index].operation.description
                        return .fail(.invalidOperationGraph(
                            "\(waiting) waits for \(prerequisite.description), which is not part of the job"))
                    }
                    if !nodes[other].isFinished { satisfied = false }
                }
                guard satisfied else { continue }
                if firstReady == nil { firstReady = index } else { moreReady.append(index) }
            }
            guard let firstReady else {
                if inFlight == 0 {
                    isLive = false
                    return .fail(.invalidOperationGraph("the prerequisites of \(pendingCount) operations form a cycle"))
                }
                return .nothing
            }
            nodes.update(at: firstReady) { $0.isPending = false }
            pendingCount -= 1
            inFlight += 1
            let first = nodes[firstReady].operation
            if moreReady.isEmpty { return .submitOne(first, dispatcher) }
            var ready = [first]
            ready.reserveCapacity(1 + moreReady.count)
            for index in moreReady {
                nodes.update(at: index) { $0.isPending = false }
                ready.append(nodes[index].operation)
            }
            pendingCount -= moreReady.count
            inFlight += moreReady.count
            return .submit(ready, dispatcher)
        }

        func finishOrder() -> [QueueOperation] {
            nodes.sorted { $0.finishSequence < $1.finishSequence }.map(\.operation)
        }

        /// Sets one operation's progress and returns the weighted aggregate.
        mutating func setWeight(_ weight: Double, of index: Int) -> Double {
            totalWeight += weight - nodes[index].weight
            weightedProgress += (weight - nodes[index].weight) * nodes[index].progress
            nodes.update(at: index) { $0.weight = weight }
            return totalWeight > 0 ? weightedProgress / totalWeight : 0
        }

        mutating func setProgress(_ fraction: Double, of index: Int) -> Double {
            let clamped = min(1, max(0, fraction))
            weightedProgress += nodes[index].weight * (clamped - nodes[index].progress)
            nodes.update(at: index) { $0.progress = clamped }
            return totalWeight > 0 ? weightedProgress / totalWeight : 0
        }
    }
}
