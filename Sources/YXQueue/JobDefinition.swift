/// A job defined as a value: its parameters are its stored properties, its ``work`` says how it runs.
/// The common way to define a job: no subclass, no `@unchecked Sendable`, no cast on the result.
///
/// ```swift
/// struct Thumbnail: JobDefinition, Codable {
///     static let name = "thumbnail"          // stable: what a durable store keeps
///     let path: String
///     let width: Int
///
///     var work: JobWork<Data> {
///         .run(on: "cpu") { context in
///             try renderThumbnail(path, width: width, progress: context.reportProgress)
///         }
///     }
/// }
///
/// let dispatcher = Dispatcher(queues: ["cpu": 2])
/// let data: Data = try await dispatcher.run(Thumbnail(path: "/tmp/a.jpg", width: 128))
/// ```
///
/// A job of several steps returns a graph from ``work`` (see ``JobWork`` and ``JobStep``): each step runs
/// on a named queue, after its prerequisites, and reads their typed outputs.
///
/// A definition that is also `Codable` can be stored and run by workers in other processes (the durable
/// job stores); ``name`` is what they store, so renaming the Swift type does not orphan stored jobs.
public protocol JobDefinition: Sendable {
    /// What the job produces: the type of `try await dispatcher.run(definition)`.
    associatedtype Output: Sendable

    /// The job's stable name (default: the type's name). Logs, metrics and stores use it.
    static var name: String { get }

    /// How the job runs: one body on a queue, or a graph of steps. Read once per attempt (and once per
    /// retry); keep it a pure function of the definition's properties.
    var work: JobWork<Output> { get }

    /// How failures are retried (default: never). Steps that already succeeded are not run again.
    var retryPolicy: RetryPolicy { get }

    /// The longest an attempt may run, retries included (default: no limit).
    var deadline: Duration? { get }
}

extension JobDefinition {
    public static var name: String { TypeNames.name(of: Self.self) }
    public var retryPolicy: RetryPolicy { .never }
    public var deadline: Duration? { nil }
}
