/// An operation whose work is an `async` closure, run in a `Task` that is cancelled when the operation
/// is. Its ``ValueOperation/output`` has the closure's type.
///
/// ```swift
/// final class ReportManager: JobManager, @unchecked Sendable {
///     override func makeOperations() -> [QueueOperation] {
///         let fetch = TaskOperation(queue: "io") { op in
///             try await fetchRows(progress: op.reportProgress)       // [Row]
///         }
///         let render = TaskOperation(queue: "cpu") { _ in
///             try render(fetch.output ?? [])                         // typed: no cast
///         }
///         render.addPrerequisite(fetch)
///         return [fetch, render]
///     }
/// }
/// ```
public final class TaskOperation<Output: Sendable>: ValueOperation<Output>, @unchecked Sendable {
    /// The work: returns the operation's output, or throws its error. It receives the operation (to
    /// report progress).
    public typealias Body = @Sendable (QueueOperation) async throws -> Output

    private let body: Body?
    private let task = Locked<Task<Void, Never>?>(nil)

    /// Creates an operation that runs `body` on `queue`.
    public init(queue: String, resourceIdentifier: String? = nil, body: @escaping Body) {
        self.body = body
        super.init(queue: queue, resourceIdentifier: resourceIdentifier)
    }

    /// Creates an operation with no work: it fails with ``JobError/invalidOperation(_:)``.
    public required init(queue: String, resourceIdentifier: String? = nil) {
        self.body = nil
        super.init(queue: queue, resourceIdentifier: resourceIdentifier)
    }

    /// Starting a task does not block: the operation starts on the thread that frees its slot.
    public override var executesInline: Bool { true }

    public override func produce(completion: @escaping @Sendable (Result<Output, any Error>) -> Void) {
        guard let body else {
            return completion(.failure(JobError.invalidOperation("a TaskOperation made without a body")))
        }
        let work = Task {
            do {
                completion(.success(try await body(self)))
            } catch {
                completion(.failure(error))
            }
        }
        task.withLock { $0 = work }
        if isCancelled { work.cancel() }
    }

    public override func operationDidCancel() {
        task.withLock { $0 }?.cancel()
    }
}
