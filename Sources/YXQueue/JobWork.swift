/// How a ``JobDefinition`` runs: one body on a named queue, or a graph of ``JobStep``s that ends in the
/// step whose output is the job's.
///
/// ```swift
/// // one body
/// var work: JobWork<Int> { .run(on: "io") { context in try countLines(path) } }
///
/// // a graph: read on "io", then two resizes on "cpu" side by side, then a write
/// var work: JobWork<URL> {
///     let bytes = JobStep(on: "io") { _ in try Data(contentsOf: source) }
///     let small = JobStep(on: "cpu", after: bytes) { data, _ in resize(data, to: 64) }
///     let large = JobStep(on: "cpu", after: bytes) { data, _ in resize(data, to: 512) }
///     let saved = JobStep(on: "io", after: small, large) { small, large, _ in try save(small, large) }
///     return JobWork(saved)
/// }
/// ```
public struct JobWork<Output: Sendable>: Sendable {
    /// The step whose output is the job's; the graph is every step it waits for, directly or not.
    public let final: JobStep<Output>

    /// The graph that ends in `final`.
    public init(_ final: JobStep<Output>) {
        self.final = final
    }

    /// One `async` body on `queue`.
    public static func run(
        on queue: String, _ body: @escaping @Sendable (JobContext) async throws -> Output
    ) -> JobWork {
        JobWork(JobStep(on: queue, body))
    }

    /// One synchronous body on `queue`, run on a pool thread (no task is created: cheaper for short
    /// work).
    public static func run(on queue: String, _ body: @escaping @Sendable (JobContext) throws -> Output) -> JobWork {
        JobWork(JobStep(on: queue, body))
    }
}
