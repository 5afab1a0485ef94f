import Foundation
import Logging
import GRDB
import GRDBSQLite
import YXJobStore
@_spi(YXQueueInternals) import YXQueue

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The embedded job store: one SQLite file, shared by several processes on one machine, no server.
///
/// The file is created on first use (readable by its owner only: payloads may hold credentials), in WAL
/// mode (readers never wait for the writer), with its schema
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
    /// The connection every write goes through, one at a time (GRDB runs its work on one serial queue).
    let writer: DatabaseQueue
    /// A read-only connection: reads see the last commit and never wait for the writer.
    let reader: DatabaseQueue
    let changes = ChangeSignal()
    /// Whether the store has limits, read at most once a second.
    let limitsPresence = LimitsPresence()
    private let poller = Locked<Task<Void, Never>?>(nil)
    private let state = Locked(State())

    struct State {
        var closed = false
    }

    private init(
        path: String,
        configuration: Configuration,
        logger: Logger,
        writer: DatabaseQueue,
        reader: DatabaseQueue
    ) {
        self.path = path
        self.configuration = configuration
        self.logger = logger
        self.writer = writer
        self.reader = reader
    }

    /// Throws when the file at `path` holds other tables and no store: read with a plain read-only
    /// connection, before the store's own connection changes anything (it sets the journal mode).
    private static func refuseForeignDatabase(at path: String, busyMode: Database.BusyMode) throws {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        guard size > 0 else { return }
        var settings = GRDB.Configuration()
        settings.readonly = true
        settings.busyMode = busyMode  // waits for a writer's lock as the store's connections do
        let reader = try DatabaseQueue(path: path, configuration: settings)
        defer { try? reader.close() }
        try reader.inDatabase { db in try SQLiteSchema.refuseForeign(db) }
    }

    /// Opens (creating when missing) the store in the file at `path`, and creates or migrates its schema.
    ///
    /// - Parameters:
    ///   - path: The database file; its folder must exist. `-wal` and `-shm` files appear beside it.
    ///   - configuration: Busy timeout, poll interval, enqueue durability.
    ///   - logger: Where the store logs.
    /// - Throws: SQLite's errors, ``JobStoreError/schemaTooNew(found:supported:)``, or
    ///   ``JobStoreError/invalidLocation(_:)`` for a database that holds other tables and no store (it is
    ///   not written to).
    public static func open(
        path: String,
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "yxjobstore.sqlite")
    ) async throws -> SQLiteJobStore {
        // Each connection runs its work on a serial queue of its own: a write that waits for another
        // process's lock holds that queue, not a thread of Swift's cooperative pool.
        var settings = GRDB.Configuration()
        settings.busyMode = .timeout(max(0.001, Double(configuration.busyTimeout.milliseconds) / 1000))
        settings.label = "yxjobstore.sqlite.writer"
        settings.prepareDatabase { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            // A statement that changes several rows inside a transaction keeps a statement journal, a
            // temporary file by default: created, written and deleted for every such statement (an
            // outcome and a claim in one transaction took 100 µs each with it, 16 µs without).
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
        }
        // A new store is readable by its owner only: job payloads may hold credentials (a URL's
        // user:password, a header). SQLite gives its `-wal` and `-shm` files the database's mode.
        #if canImport(Glibc)
        let created = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if created >= 0 { Glibc.close(created) }
        #elseif canImport(Darwin)
        let created = Darwin.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if created >= 0 { Darwin.close(created) }
        #endif
        try refuseForeignDatabase(at: path, busyMode: settings.busyMode)
        let writer = try DatabaseQueue(path: path, configuration: settings)
        do {
            try await writer.writeWithoutTransaction { db in try SQLiteSchema.migrate(db) }
            var readerSettings = GRDB.Configuration()
            readerSettings.busyMode = settings.busyMode
            readerSettings.readonly = true
            readerSettings.label = "yxjobstore.sqlite.reader"
            let reader = try DatabaseQueue(path: path, configuration: readerSettings)
            let store = SQLiteJobStore(
                path: path,
                configuration: configuration,
                logger: logger,
                writer: writer,
                reader: reader
            )
            store.startPoller()
            return store
        } catch {
            try? writer.close()
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
        // Closing runs on each connection's queue, after the work already given to it. The reader goes
        // first: the last connection to close checkpoints the log into the database and deletes the
        // `-wal` and `-shm` files, which a read-only connection cannot do (closed last, it left them).
        try reader.close()
        try writer.close()
        changes.signal()
    }

    func checkOpen() throws {
        if state.withLock({ $0.closed }) { throw JobStoreError.closed }
    }

    // MARK: - Transactions

    /// Runs `body` on the writer connection, alone among this store's writes, outside a transaction (a
    /// single statement is its own).
    package func withWriter<T: Sendable>(_ body: @Sendable (Database) throws -> T) async throws -> T {
        try checkOpen()
        return try await writer.writeWithoutTransaction(body)
    }

    /// Whether this process can only read the store: SQLite opened the file read-only (its permissions,
    /// its folder's, or a read-only file system) although a writer was asked for. Claims, outcomes and
    /// enqueues then fail until the store is opened again, whatever happens to the file meanwhile: a
    /// worker checks this before it starts.
    public func isReadOnly() async throws -> Bool {
        try await withWriter { db in sqlite3_db_readonly(db.sqliteConnection, "main") == 1 }
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction on the writer connection; with `durable`, its commit
    /// is synced to disk before this returns.
    func transaction<T: Sendable>(
        durable: Bool = false,
        _ body: @Sendable (Database) throws -> T
    ) async throws -> T {
        try await withWriter { db in
            if durable { try db.run("PRAGMA synchronous = FULL") }
            defer { if durable { try? db.run("PRAGMA synchronous = NORMAL") } }
            // Kept compiled, as the statements of an unbatched worker are: one of these runs per job.
            _ = try db.rows("BEGIN IMMEDIATE", prepared: true)
            do {
                let result = try body(db)
                _ = try db.rows("COMMIT", prepared: true)
                return result
            } catch {
                try? db.run("ROLLBACK")
                throw error
            }
        }
    }

    /// Runs `body` on the read-only connection.
    func withReader<T: Sendable>(_ body: @Sendable (Database) throws -> T) async throws -> T {
        try checkOpen()
        return try await reader.unsafeRead(body)
    }

    // MARK: - Limits cache

    /// Whether the claim must read the limits: true when limits existed at the last look, which is
    /// at most a second old. A claim never takes a limited job without reading the limits, so a stale
    /// "no limits" only delays limited jobs by that second.
    func mayHaveLimits() async throws -> Bool {
        try await limitsPresence.value {
            try await self.withReader { db in
                let rows = try db.rows("SELECT EXISTS (SELECT 1 FROM job_limits) AS present", prepared: true)
                return rows.first?.bool("present") ?? true
            }
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
            let dataVersion = { @Sendable (db: Database) throws -> Int64? in
                try db.rows("PRAGMA data_version", prepared: true).first?.optionalInt64("data_version")
            }
            var lastVersion: Int64?
            while !Task.isCancelled {
                if !changes.hasWaiters {
                    await changes.waitForWaiters()
                    continue
                }
                do {
                    let version = try await reader.unsafeRead(dataVersion)
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
