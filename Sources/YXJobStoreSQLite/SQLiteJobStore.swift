import Foundation
import Logging
import SQLiteNIO
import YXJobStore
import YXQueue

/// The embedded job store: one SQLite file, shared by several processes on one machine, no server.
///
/// The file is created on first use, in WAL mode (readers never wait for the writer), with its schema
/// created or migrated by the library. Every write takes SQLite's single writer lock: claims are one
/// `UPDATE … WHERE id IN (SELECT … LIMIT n) RETURNING …` statement (with the concurrency limits read in
/// the same `BEGIN IMMEDIATE` transaction when limits are set), so two processes never claim one job
/// and a limit is never exceeded. Processes that wait for work look at SQLite's data version every
/// ``Configuration/pollInterval`` (5 ms by default): a job enqueued by another process starts within
/// milliseconds.
///
/// Enqueue transactions are synced to disk before they return (`synchronous=FULL`): an accepted job
/// survives a power loss. Claims, heartbeats and outcomes use `synchronous=NORMAL`: they survive a
/// crash of any process; a power loss may forget the latest ones, and those jobs run again.
///
/// ```swift
/// let store = try await SQLiteJobStore.open(path: "/var/lib/app/jobs.sqlite")
/// try await store.enqueue(JobRequest(name: "email", parameters: Email(to: "a@example.com")))
/// try await store.close()
/// ```
public final class SQLiteJobStore: JobStore {
    /// Settings of an SQLite store.
    public struct Configuration: Sendable {
        /// How long a write waits for another process's write lock before it fails.
        public var busyTimeout: Duration
        /// How often a waiting worker looks at the data version for other processes' commits.
        public var pollInterval: Duration
        /// Sync enqueue transactions to disk before returning (`synchronous=FULL` for them).
        public var durableEnqueue: Bool

        /// Settings; see each property.
        public init(
            busyTimeout: Duration = .seconds(10),
            pollInterval: Duration = .milliseconds(5),
            durableEnqueue: Bool = true
        ) {
            self.busyTimeout = busyTimeout
            self.pollInterval = pollInterval
            self.durableEnqueue = durableEnqueue
        }
    }

    /// The file.
    public let path: String
    let configuration: Configuration
    let logger: Logger
    let writer: SQLiteConnection
    let reader: SQLiteConnection
    let writeLock = AsyncLock()
    let changes = ChangeSignal()
    /// Whether the store has limits, read at most once a second.
    let limitsPresence = LimitsPresence()
    private let threadPool: NIOThreadPool
    private let poller = Locked<Task<Void, Never>?>(nil)
    private let state = Locked(State())

    struct State {
        var closed = false
    }

    private init(
        path: String,
        configuration: Configuration,
        logger: Logger,
        threadPool: NIOThreadPool,
        writer: SQLiteConnection,
        reader: SQLiteConnection
    ) {
        self.path = path
        self.configuration = configuration
        self.logger = logger
        self.threadPool = threadPool
        self.writer = writer
        self.reader = reader
    }

    /// Opens (creating when missing) the store in the file at `path`, and creates or migrates its schema.
    ///
    /// - Parameters:
    ///   - path: The database file; its folder must exist. `-wal` and `-shm` files appear beside it.
    ///   - configuration: Busy timeout, poll interval, enqueue durability.
    ///   - logger: Where the store logs.
    /// - Throws: SQLite's errors, or ``JobStoreError/schemaTooNew(found:supported:)``.
    public static func open(
        path: String,
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "yxjobstore.sqlite")
    ) async throws -> SQLiteJobStore {
        // Our own threads: a write that waits for another process's lock must not hold a shared pool's.
        let threadPool = NIOThreadPool(numberOfThreads: 2)
        threadPool.start()
        let eventLoop = MultiThreadedEventLoopGroup.singleton.any()
        var opened: [SQLiteConnection] = []
        do {
            let writer = try await SQLiteConnection.open(
                storage: .file(path: path),
                threadPool: threadPool,
                logger: logger,
                on: eventLoop
            )
            opened.append(writer)
            let busy = max(1, configuration.busyTimeout.milliseconds)
            _ = try await writer.rows("PRAGMA busy_timeout = \(busy)")
            _ = try await writer.rows("PRAGMA journal_mode = WAL")
            _ = try await writer.rows("PRAGMA synchronous = NORMAL")
            try await SQLiteSchema.migrate(writer)
            let reader = try await SQLiteConnection.open(
                storage: .file(path: path),
                threadPool: threadPool,
                logger: logger,
                on: eventLoop
            )
            opened.append(reader)
            _ = try await reader.rows("PRAGMA busy_timeout = \(busy)")
            let store = SQLiteJobStore(
                path: path,
                configuration: configuration,
                logger: logger,
                threadPool: threadPool,
                writer: writer,
                reader: reader
            )
            store.startPoller()
            return store
        } catch {
            for connection in opened {
                try? await connection.close()
            }
            try? await threadPool.shutdownGracefully()
            throw error
        }
    }

    public func close() async throws {
        let wasOpen = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard wasOpen else { return }
        let task = poller.withLock { $0 }
        task?.cancel()
        await task?.value
        try await writeLock.withLock {
            try await writer.close()
        }
        try await reader.close()
        try await threadPool.shutdownGracefully()
        changes.signal()
    }

    func checkOpen() throws {
        if state.withLock({ $0.closed }) { throw JobStoreError.closed }
    }

    // MARK: - Transactions

    /// Runs `body` on the writer connection, alone among this store's writes.
    func withWriter<T: Sendable>(_ body: (SQLiteConnection) async throws -> T) async throws -> T {
        try checkOpen()
        return try await writeLock.withLock {
            try checkOpen()
            return try await body(writer)
        }
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction on the writer connection.
    func transaction<T: Sendable>(durable: Bool = false, _ body: (SQLiteConnection) async throws -> T) async throws -> T {
        try await withWriter { connection in
            if durable { _ = try await connection.rows("PRAGMA synchronous = FULL") }
            _ = try await connection.rows("BEGIN IMMEDIATE")
            do {
                let result = try await body(connection)
                _ = try await connection.rows("COMMIT")
                if durable { _ = try? await connection.rows("PRAGMA synchronous = NORMAL") }
                return result
            } catch {
                _ = try? await connection.rows("ROLLBACK")
                if durable { _ = try? await connection.rows("PRAGMA synchronous = NORMAL") }
                throw error
            }
        }
    }

    // MARK: - Limits cache

    /// Whether the claim must read the limits: true when limits existed at the last look, which is
    /// at most a second old. A claim never takes a limited job without reading the limits, so a stale
    /// "no limits" only delays limited jobs by that second.
    func mayHaveLimits() async throws -> Bool {
        try await limitsPresence.value {
            let rows = try await reader.rows("SELECT EXISTS (SELECT 1 FROM job_limits) AS present")
            return rows.first?.bool("present") ?? true
        }
    }

    func forgetLimitsCache() {
        limitsPresence.forget()
    }

    // MARK: - Wake-up

    public var changeGeneration: UInt64 { changes.generation }

    public func waitForChange(after generation: UInt64, timeout: Duration) async {
        await changes.wait(after: generation, timeout: timeout)
    }

    /// While some task waits for a change, reads `PRAGMA data_version` every poll interval; it moves
    /// when another connection (this process's writer, or another process) committed.
    private func startPoller() {
        let task = Task { [changes, reader, configuration] in
            var lastVersion: Int?
            while !Task.isCancelled {
                if !changes.hasWaiters {
                    await changes.waitForWaiters()
                    continue
                }
                do {
                    let rows = try await reader.rows("PRAGMA data_version")
                    let version = rows.first?.column("data_version")?.integer
                    if let version, let lastVersion, version != lastVersion {
                        changes.signal()
                    }
                    lastVersion = version
                } catch {
                    if Task.isCancelled { return }
                }
                try? await Task.sleep(for: configuration.pollInterval)
            }
        }
        poller.withLock { $0 = task }
    }
}
