/// A step of a job's graph, whatever its output type: the element of a step's prerequisites.
///
/// Make steps with ``JobStep``; this class only lets steps of different output types wait for each
/// other.
public class AnyJobStep: @unchecked Sendable {  // immutable; non-final only for JobStep
    /// The dispatcher queue the step runs on.
    public let queue: String
    /// The steps that must succeed before this one runs.
    public let prerequisites: [AnyJobStep]
    let body: Body

    /// The work, with its output type erased.
    enum Body: Sendable {
        case sync(@Sendable (JobContext) throws -> any Sendable)
        case async(@Sendable (JobContext) async throws -> any Sendable)
    }

    init(queue: String, prerequisites: [AnyJobStep], body: Body) {
        self.queue = queue
        self.prerequisites = prerequisites
        self.body = body
    }
}

/// One step of a job's graph: a body that runs on a named queue once its prerequisites succeeded, and
/// reads their outputs, typed.
///
/// ```swift
/// let rows = JobStep(on: "db") { _ in try fetchRows() }                       // JobStep<[Row]>
/// let csv = JobStep(on: "cpu", after: rows) { rows, _ in makeCSV(rows) }       // rows: [Row]
/// let sent = JobStep(on: "net", after: csv, rows) { csv, rows, context in      // two inputs
///     try await upload(csv, count: rows.count, progress: context.reportProgress)
/// }
/// return JobWork(sent)
/// ```
///
/// A body without `await` runs on a pool thread of its queue; an `async` body runs in a task. Steps with
/// more inputs list them in `after:` and read each with ``JobContext/output(of:)``.
public final class JobStep<Output: Sendable>: AnyJobStep, @unchecked Sendable {
    /// A step that runs `body` on `queue` after `prerequisites` succeeded.
    public init(
        on queue: String, after prerequisites: [AnyJobStep] = [],
        _ body: @escaping @Sendable (JobContext) async throws -> Output
    ) {
        super.init(queue: queue, prerequisites: prerequisites, body: .async({ try await body($0) }))
    }

    /// A step that runs a synchronous `body` on a pool thread of `queue` after `prerequisites` succeeded.
    public init(
        on queue: String, after prerequisites: [AnyJobStep] = [], _ body: @escaping @Sendable (JobContext) throws -> Output
    ) {
        super.init(queue: queue, prerequisites: prerequisites, body: .sync({ try body($0) }))
    }

    /// A step that receives the output of `input`.
    public convenience init<A: Sendable>(
        on queue: String, after input: JobStep<A>, _ body: @escaping @Sendable (A, JobContext) async throws -> Output
    ) {
        self.init(on: queue, after: [input]) { context in try await body(try context.output(of: input), context) }
    }

    /// A step that receives the output of `input` (synchronous body).
    public convenience init<A: Sendable>(
        on queue: String, after input: JobStep<A>, _ body: @escaping @Sendable (A, JobContext) throws -> Output
    ) {
        self.init(on: queue, after: [input]) { context in try body(try context.output(of: input), context) }
    }

    /// A step that receives the outputs of `first` and `second`.
    public convenience init<A: Sendable, B: Sendable>(
        on queue: String, after first: JobStep<A>, _ second: JobStep<B>,
        _ body: @escaping @Sendable (A, B, JobContext) async throws -> Output
    ) {
        self.init(on: queue, after: [first, second]) { context in
            try await body(try context.output(of: first), try context.output(of: second), context)
        }
    }

    /// A step that receives the outputs of `first` and `second` (synchronous body).
    public convenience init<A: Sendable, B: Sendable>(
        on queue: String, after first: JobStep<A>, _ second: JobStep<B>,
        _ body: @escaping @Sendable (A, B, JobContext) throws -> Output
    ) {
        self.init(on: queue, after: [first, second]) { context in
            try body(try context.output(of: first), try context.output(of: second), context)
        }
    }
}
