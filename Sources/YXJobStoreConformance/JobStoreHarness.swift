import YXJobStore

/// One store under test: how to open it (again and again, as several processes would), how a worker
/// process reaches it, and how to throw it away.
public struct JobStoreHarness: Sendable {
    /// "SQLite" or "PostgreSQL", for messages.
    public var storeName: String
    /// The arguments that point a `YXJobStoreTestWorker` process at the same store
    /// (`--store LOCATION`, and `--schema NAME` for PostgreSQL).
    public var workerArguments: [String]
    /// Opens a new instance of the store: its own connections, like another process's.
    public var open: @Sendable () async throws -> any JobStore
    /// Kills the worker processes still running (``TestWorkerProcess/killSurvivors()``), then deletes
    /// what the store left behind (its file, its schema).
    public var cleanup: @Sendable () async throws -> Void

    public init(
        storeName: String,
        workerArguments: [String],
        open: @escaping @Sendable () async throws -> any JobStore,
        cleanup: @escaping @Sendable () async throws -> Void
    ) {
        self.storeName = storeName
        self.workerArguments = workerArguments
        self.open = open
        self.cleanup = {
            // A scenario that failed half-way may leave a worker process holding the schema's locks.
            await TestWorkerProcess.killSurvivors()
            try await cleanup()
        }
    }
}
