
/// An operation whose work is an `async` closure, run in a `Task` that is cancelled when the operation
/// is.
///
/// ```swift
/// final class ReportManager: JobManager {
///     override func makeOperations() -> [QueueOperation] {
///         let fetch = TaskOperation(model: .init(type: "io", maxConcurrentOperationCount: 4)) { op in
///             try await fetchRows(progress: op.reportProgress)
///         }
///         let render = TaskOperation(model: .init(type: "cpu", maxConcurrentOperationCount: 2)) { op in
///             try render(fetch.result as? [Row] ?? [])
///         }
///         render.addPrerequisite(fetch)
///         return [fetch, render]
///     }
/// }
/// ```
public final class TaskOperation: QueueOperation, @unchecked Sendable {
    /// The work: returns the operation's result, or throws its error.
    public typealias Body = @Sendable (TaskOperation) async throws -> (any Sendable)?

    private let body: Body?
    private let task = Locked<Task<Void, Never>?>(nil)

    /// Creates an operation that runs `body`.
    public init(model: OperationModel, resourceIdentifier: String? = nil, body: @escaping Body) {
        self.body = body
        super.init(model: model, resourceIdentifier: resourceIdentifier)
    }

    /// Creates an operation with no work (it finishes at once with no result).
    public required init(model: OperationModel, resourceIdentifier: String? = nil) {
        self.body = nil
        super.init(model: model, resourceIdentifier: resourceIdentifier)
    }

    public override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        guard let body else { return completion(.success(nil)) }
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
