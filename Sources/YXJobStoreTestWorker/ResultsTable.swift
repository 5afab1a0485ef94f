import Foundation
import Logging
import PostgresNIO
import GRDB
import YXJobStore
import YXJobStorePostgres
import YXJobStoreSQLite

/// One execution of a job, as its handler recorded it.
struct Execution: Sendable {
    var job: Int64
    var attempt: Int
    var worker: String
}

/// The table where chaos jobs append their executions: in the store's own database, written through a
/// connection of the test's (not through the store), like any job writing its result somewhere.
protocol ResultsTable: Sendable {
    func record(job: JobID, attempt: Int, worker: String) async throws
    func all() async throws -> [Execution]
    func close() async throws
}

func openResults(_ location: String, schema: String?, logger: Logger) async throws -> any ResultsTable {
    if location.hasPrefix("postgres://") || location.hasPrefix("postgresql://") {
        return try await PostgresResults.open(url: location, schema: schema ?? "yxqueue", logger: logger)
    }
    return try await SQLiteResults.open(path: location, logger: logger)
}

final class SQLiteResults: ResultsTable {
    let queue: DatabaseQueue

    private init(queue: DatabaseQueue) {
        self.queue = queue
    }

    static func open(path: String, logger: Logger) async throws -> SQLiteResults {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try await queue.writeWithoutTransaction { db in
            try db.execute(
                sql: "CREATE TABLE IF NOT EXISTS chaos_results (job_id INTEGER NOT NULL, attempt INTEGER NOT NULL, worker TEXT NOT NULL)"
            )
        }
        return SQLiteResults(queue: queue)
    }

    func record(job: JobID, attempt: Int, worker: String) async throws {
        try await queue.writeWithoutTransaction { db in
            try db.execute(
                sql: "INSERT INTO chaos_results (job_id, attempt, worker) VALUES (?, ?, ?)",
                arguments: [job.rawValue, attempt, worker]
            )
        }
    }

    func all() async throws -> [Execution] {
        try await queue.unsafeRead { db in
            try Row.fetchAll(db, sql: "SELECT job_id, attempt, worker FROM chaos_results ORDER BY job_id, attempt").map {
                Execution(job: $0["job_id"], attempt: $0["attempt"], worker: $0["worker"])
            }
        }
    }

    func close() async throws {
        try queue.close()
    }
}

final class PostgresResults: ResultsTable {
    let client: PostgresClient
    let run: Task<Void, Never>
    let table: String
    let logger: Logger

    private init(client: PostgresClient, run: Task<Void, Never>, table: String, logger: Logger) {
        self.client = client
        self.run = run
        self.table = table
        self.logger = logger
    }

    static func open(url: String, schema: String, logger: Logger) async throws -> PostgresResults {
        var configuration = try PostgresLocation(url: url).clientConfiguration()
        configuration.options.maximumConnections = 8
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let run = Task { await client.run() }
        let table = "\"\(schema)\".chaos_results"
        let results = PostgresResults(client: client, run: run, table: table, logger: logger)
        do {
            try await client.query(
                PostgresQuery(
                    unsafeSQL: "CREATE TABLE IF NOT EXISTS \(table) (job_id bigint NOT NULL, attempt integer NOT NULL, worker text NOT NULL)"
                ),
                logger: logger
            )
        } catch {
            // Two processes creating the table at once: one of them loses the race, the table exists.
            if !(String(reflecting: error).contains("already exists") || String(reflecting: error).contains("23505")) {
                run.cancel()
                throw error
            }
        }
        return results
    }

    func record(job: JobID, attempt: Int, worker: String) async throws {
        var binds = PostgresBindings()
        binds.append(job.rawValue)
        binds.append(attempt)
        binds.append(worker)
        try await client.query(
            PostgresQuery(unsafeSQL: "INSERT INTO \(table) (job_id, attempt, worker) VALUES ($1, $2, $3)", binds: binds),
            logger: logger
        )
    }

    func all() async throws -> [Execution] {
        let rows = try await client.query(
            PostgresQuery(unsafeSQL: "SELECT job_id, attempt, worker FROM \(table) ORDER BY job_id, attempt"),
            logger: logger
        )
        var executions: [Execution] = []
        for try await (job, attempt, worker) in rows.decode((Int64, Int, String).self) {
            executions.append(Execution(job: job, attempt: attempt, worker: worker))
        }
        return executions
    }

    func close() async throws {
        run.cancel()
        await run.value
    }
}
