import Dispatch

/// A class-layer job whose operations a closure builds: the graph of ``QueueOperation``s of the
/// original YXQueue, with delegates and closure observers, and no subclass to write.
///
/// ```swift
/// let job = GraphJob(name: "checksum") { _ in
///     let read = TaskOperation(queue: "io") { _ in try Data(contentsOf: file) }
///     let sum = TaskOperation(queue: "cpu") { _ in (read.output ?? Data()).reduce(0) { $0 &+ Int($1) } }
///     sum.addPrerequisite(read)
///     return [read, sum]
/// }
/// job.addDelegate(printer)
/// let result = try await job.run(on: dispatcher)
/// ```
///
/// The closure is called once per attempt (and per retry) and must build new operations each time. It
/// receives the job's manager, which can ``JobManager/addOperations(_:)`` later while the job runs. For
/// a graph that reacts to finished operations, subclass ``JobManager`` (and ``Job``) instead; Swift
/// cannot check a class hierarchy, so such subclasses restate their inherited unchecked `Sendable`
/// conformance.
public final class GraphJob: Job, @unchecked Sendable {
    /// Builds the operations of one attempt.
    public typealias Builder = @Sendable (JobManager) -> [QueueOperation]

    private let jobName: String
    let build: Builder

    /// Creates a job whose operations `build` makes.
    ///
    /// - Parameters:
    ///   - name: The job's name, for logs and metrics.
    ///   - tag: A number of your choosing.
    ///   - callbackQueue: Where callbacks are delivered.
    ///   - retryPolicy: How failures are retried (default: never).
    ///   - deadline: The longest an attempt may run (default: no limit).
    ///   - build: Makes the operations of one attempt, with their prerequisites.
    public init(
        name: String, tag: Int = 0, callbackQueue: DispatchQueue = Job.defaultCallbackQueue,
        retryPolicy: RetryPolicy = .never, deadline: Duration? = nil, build: @escaping Builder
    ) {
        self.jobName = name
        self.build = build
        super.init(tag: tag, callbackQueue: callbackQueue, retryPolicy: retryPolicy, deadline: deadline)
    }

    public override class var managerClass: JobManager.Type { GraphJobManager.self }

    /// The name given when the job was made.
    public override var name: String { jobName }
}

/// Calls a ``GraphJob``'s closure.
final class GraphJobManager: JobManager, @unchecked Sendable {
    override func makeOperations() -> [QueueOperation] {
        (job as? GraphJob)?.build(self) ?? []
    }
}
