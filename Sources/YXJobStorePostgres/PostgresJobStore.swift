import Foundation
import Logging
import PostgresNIO
import YXJobStore
@_spi(YXQueueInternals) import YXQueue

/// The distributed job store: PostgreSQL, for many worker processes on many machines.
///
/// Open it from a `postgres://` URL; its tables live in a schema of their own (``Configuration/schema``,
/// `yxqueue` by default), created or migrated by the library. The server's clock is the one clock:
/// leases, not-before times and retries are compared with `now()` on the server.
///
/// - A claim is one statement: `UPDATE jobs … FROM (SELECT id … ORDER BY priority, run_at, id LIMIT n
///   FOR UPDATE SKIP LOCKED) …`, so concurrent workers never wait for each other and never take one job
///   twice. Jobs of keys with a concurrency limit are claimed in a transaction that first locks those
///   limits' rows, so that the running count it reads cannot be raised by anyone else before it commits.
/// - Outcomes and heartbeats of many jobs are each one statement over arrays (`unnest`), fenced by
///   `id`, `attempt` and `owner`.
/// - Workers wake on `LISTEN/NOTIFY`; the worker's jittered poll covers a notification that was lost.
///
/// ```swift
/// let store = try await PostgresJobStore.open(url: "postgres://app@db.internal/app")
/// try await store.enqueue(JobRequest(name: "email", parameters: Email(to: "a@example.com")))
/// try await store.close()
/// ```
public final class PostgresJobStore: JobStore {
    /// Settings of a PostgreSQL store.
    public struct Configuration: Sendable {
        /// The schema (namespace) that holds the store's tables; letters, digits and `_` only.
        public var schema: String
        /// The most connections this process opens to the server.
        public var maximumConnections: Int
        /// How long opening a connection may take.
        public var connectTimeout: Duration
        /// Listen for notifications of new work (one connection stays open for it).
        public var listensForChanges: Bool
        /// Wait for the server's disk on every worker write (claims, heartbeats, outcomes) too.
        ///
        /// By default only enqueues, cancels and limit changes wait for the write-ahead log to reach the
        /// disk (`synchronous_commit`); worker writes do not (a flush costs a few milliseconds on many
        /// disks, which caps one-job transactions at a few hundred a second). A server crash may then
        /// forget the last fraction of a second of worker writes: those jobs run again (at least once),
        /// and none is lost.
        public var durableWorkerWrites: Bool
        /// The longest a statement may wait for its answer before its connection is closed and the call
        /// fails. It guards against a postgres-nio 1.33.2 trap: a statement sent on a connection that the
        /// server is closing at that very moment is never answered.
        public var queryTimeout: Duration

        /// Settings; see each property.
        public init(
            schema: String = "yxqueue",
            maximumConnections: Int = 8,
            connectTimeout: Duration = .seconds(10),
            listensForChanges: Bool = true,
            durableWorkerWrites: Bool = false,
            queryTimeout: Duration = .seconds(10)
        ) {
            self.schema = schema
            self.maximumConnections = maximumConnections
            self.connectTimeout = connectTimeout
            self.listensForChanges = listensForChanges
            self.durableWorkerWrites = durableWorkerWrites
            self.queryTimeout = queryTimeout
        }
    }

    /// Where the server is.
    public let location: PostgresLocation
    let configuration: Configuration
    let logger: Logger
    let client: PostgresClient
    /// `"schema"`, ready to put before a table name.
    let schema: String
    /// The notification channel of this store's schema.
    let channel: String
    let changes = ChangeSignal()
    /// Whether the store has limits, read at most once a second.
    let limitsPresence = LimitsPresence()
    private let tasks = Locked<[Task<Void, Never>]>([])
    private let state = Locked(State())

    struct State {
        var closed = false
    }

    private init(location: PostgresLocation, configuration: Configuration, logger: Logger, client: PostgresClient) {
        self.location = location
        self.configuration = configuration
        self.logger = logger
        self.client = client
        self.schema = Self.quote(configuration.schema)
        self.channel = "yxjobstore.\(configuration.schema)"
    }

    /// Connects to the server at `url` and creates or migrates the store's schema.
    ///
    /// - Parameters:
    ///   - url: `postgres://user:password@host:port/database?sslmode=…` (see ``PostgresLocation``).
    ///   - configuration: Schema name, connection count, listening.
    ///   - logger: Where the store logs.
    /// - Throws: ``JobStoreError/invalidLocation(_:)``, ``JobStoreError/invalidArgument(_:)`` for a bad
    ///   schema name, connection errors, or ``JobStoreError/schemaTooNew(found:supported:)``.
    public static func open(
        url: String,
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "yxjobstore.postgres")
    ) async throws -> PostgresJobStore {
        guard !configuration.schema.isEmpty,
            configuration.schema.utf8.count <= 40,
            configuration.schema.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
        else {
            throw JobStoreError.invalidArgument("schema name \"\(configuration.schema)\" (letters, digits, _ only)")
        }
        let location = try PostgresLocation(url: url)
        var clientConfiguration = location.clientConfiguration()
        clientConfiguration.options.maximumConnections = max(2, configuration.maximumConnections)
        clientConfiguration.options.connectTimeout = configuration.connectTimeout
        if !configuration.durableWorkerWrites {
            // The session default; enqueues, cancels and limits switch it back on for their transaction.
            clientConfiguration.options.additionalStartupParameters.append(("synchronous_commit", "off"))
        }
        // The statements kept compiled name their tables without the schema (see PreparedStatements.swift).
        clientConfiguration.options.additionalStartupParameters.append(("search_path", quote(configuration.schema)))
        let client = PostgresClient(configuration: clientConfiguration, backgroundLogger: logger)
        let store = PostgresJobStore(location: location, configuration: configuration, logger: logger, client: client)
        // The pool runs from here; the schema is made meanwhile on a connection of its own, so that the
        // pool is running (it warns otherwise) by the time the store is first used.
        let run = Task { await client.run() }
        store.tasks.withLock { $0.append(run) }
        do {
            var migrationConfiguration = try location.connectionConfiguration()
            migrationConfiguration.options.connectTimeout = .milliseconds(configuration.connectTimeout.milliseconds)
            let migration = try await PostgresConnection.connect(configuration: migrationConfiguration, id: 0, logger: logger)
            do {
                try await PostgresSchema.migrate(migration, schema: configuration.schema, logger: logger)
                try await migration.close()
            } catch {
                try? await migration.close()
                throw error
            }
        } catch {
            run.cancel()
            await run.value
            throw error
        }
        if configuration.listensForChanges { store.startListening() }
        return store
    }

    /// Stops listening and shuts the connection pool down. Waits for the pool at most twice
    /// ``Configuration/queryTimeout``: a connection stuck on a statement that never gets its answer does not
    /// hold the caller.
    public func close() async throws {
        let wasOpen = state.withLock { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard wasOpen else { return }
        let running = tasks.withLock { $0 }
        for task in running.reversed() {
            task.cancel()
        }
        // The pool's run ends once every leased connection is back. A statement stuck past its deadline
        // (see `Deadline`) may hold its lease a while longer: close waits for the pool at most as long as
        // two statements may take, then leaves it to end on its own, instead of hanging its caller.
        let logger = logger
        _ = try? await Deadline.run(within: configuration.queryTimeout * 2) {
            for task in running {
                await task.value
            }
        } onTimeout: {
            logger.warning("the connection pool did not shut down in time; close returns without it")
        }
        changes.signal()
    }

    /// Deletes the store's schema with every job, dependency and limit in it, then closes the store.
    /// For tests and benchmarks that made a schema of their own.
    public func dropSchema() async throws {
        _ = try await rows("DROP SCHEMA IF EXISTS \(schema) CASCADE")
        try await close()
    }

    func checkOpen() throws {
        if state.withLock({ $0.closed }) { throw JobStoreError.closed }
    }

    /// `"name"`, with quotes doubled.
    static func quote(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    // MARK: - Queries

    /// Runs one statement on a pooled connection and returns its rows.
    ///
    /// The connection is leased with `withConnection`, not through `PostgresClient.query`: in
    /// postgres-nio 1.33.2 that one leaks its lease when the connection fails between the start of the
    /// answer and the making of the row sequence (`PSQLRowStream.asyncSequence` does not call `onFinish`
    /// for an already failed stream), and once every connection has leaked, every later query waits
    /// forever. Found by dropping the store's connections while a worker ran.
    func rows(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) async throws -> [PostgresRandomAccessRow] {
        try checkOpen()
        return try await client.withConnection { connection in
            try await self.rows(on: connection, sql, binds)
        }
    }

    /// Runs one statement on `connection` and returns its rows, within ``Configuration/queryTimeout``.
    func rows(
        on connection: PostgresConnection,
        _ sql: String,
        _ binds: PostgresBindings = PostgresBindings()
    ) async throws -> [PostgresRandomAccessRow] {
        let logger = self.logger
        let query = PostgresQuery(unsafeSQL: sql, binds: binds)
        return try await withinQueryTimeout(on: connection) {
            let sequence = try await connection.query(query, logger: logger)
            return try await sequence.collect().map { $0.makeRandomAccess() }
        }
    }

    /// Runs a statement kept compiled (see ``StoredStatement``) on a pooled connection and returns its
    /// rows, within ``Configuration/queryTimeout``.
    func rows(prepared statement: some StoredStatement) async throws -> [PostgresRandomAccessRow] {
        try checkOpen()
        let logger = self.logger
        return try await client.withConnection { connection in
            try await self.withinQueryTimeout(on: connection) {
                var rows: [PostgresRandomAccessRow] = []
                for try await row in try await connection.execute(statement, logger: logger) {
                    rows.append(row)
                }
                return rows
            }
        }
    }

    /// Runs `operation` on `connection` within ``Configuration/queryTimeout``; past it, the caller gets
    /// ``JobStoreError/timedOut(_:)`` and the connection is closed, so that the pool replaces it (see
    /// ``Deadline``).
    private func withinQueryTimeout<T: Sendable>(
        on connection: PostgresConnection,
        _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let logger = self.logger
        return try await Deadline.run(within: configuration.queryTimeout, operation) {
            logger.warning("a statement got no answer in time; closing its connection")
            connection.close().whenComplete { _ in }
        }
    }

    /// Runs `body` in a transaction on one connection; a `durable` one returns only once its commit is on
    /// the server's disk.
    func transaction<T: Sendable>(
        durable: Bool = false,
        _ body: @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try checkOpen()
        return try await client.withConnection { connection in
            _ = try await self.rows(on: connection, "BEGIN")
            if durable, !self.configuration.durableWorkerWrites {
                _ = try await self.rows(on: connection, "SET LOCAL synchronous_commit TO on")
            }
            do {
                let result = try await body(connection)
                _ = try await self.rows(on: connection, "COMMIT")
                return result
            } catch {
                _ = try? await self.rows(on: connection, "ROLLBACK")
                throw error
            }
        }
    }

    /// Tells every listening process (this one included) that jobs may be ready.
    func notifyChange(on connection: PostgresConnection? = nil) async {
        var binds = PostgresBindings()
        binds.append(channel)
        do {
            if let connection {
                _ = try await rows(on: connection, "SELECT pg_notify($1, '')", binds)
            } else {
                _ = try await rows("SELECT pg_notify($1, '')", binds)
            }
        } catch {
            logger.debug("notify failed", metadata: ["error": "\(String(reflecting: error))"])
        }
        changes.signal()
    }

    // MARK: - Limits cache

    /// Whether the claim must take the limited path: true when limits existed at the last look, at most
    /// a second ago. The unlimited path never takes a job of a limited key, so a stale "no limits" only
    /// delays those jobs by that second.
    func mayHaveLimits() async throws -> Bool {
        try await limitsPresence.value {
            let result = try await rows("SELECT EXISTS (SELECT 1 FROM \(schema).job_limits)")
            return try result.first?[0].decode(Bool.self) ?? true
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

    /// Keeps one connection listening on the store's channel; every notification (and every reconnect,
    /// after which some may have been missed) moves the change generation.
    private func startListening() {
        let task = Task { [client, channel, changes, logger] in
            var delay = Duration.milliseconds(100)
            while !Task.isCancelled {
                do {
                    try await client.withConnection { connection in
                        try await connection.listen(on: channel) { notifications in
                            changes.signal()
                            for try await _ in notifications {
                                changes.signal()
                            }
                        }
                    }
                } catch {
                    if Task.isCancelled { return }
                    logger.debug("listening failed; again soon", metadata: ["error": "\(String(reflecting: error))"])
                }
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
        tasks.withLock { $0.append(task) }
    }
}
