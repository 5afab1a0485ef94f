import Foundation
import GRDB
import YXJobStore

extension SQLiteJobStore {
    static let recordColumns = """
        id, name, state, payload, attempt, failures, lease_expiries, max_attempts, retry_initial_ms, retry_max_ms,
        retry_jitter, retry_max_after_ms, retry_scope, timeout_ms, priority, concurrency_key, unique_key, created_at,
        run_at, started_at, finished_at, owner, lease_until, cancel_requested, progress, units_done, units_total,
        message, result
        """

    public func job(_ id: JobID) async throws -> JobRecord? {
        try checkOpen()
        return try await withReader { db in
            let rows = try db.rows(
                "SELECT \(Self.recordColumns) FROM jobs WHERE id = ?",
                [SQLiteData(id.rawValue)],
                prepared: true
            )
            return try Self.records(rows, db).first
        }
    }

    public func jobs(_ query: JobQuery) async throws -> [JobRecord] {
        try checkOpen()
        var conditions: [String] = []
        var binds: [SQLiteData] = []
        if let states = query.states {
            let list = states.map(\.rawValue).sorted()
            conditions.append(list.isEmpty ? "0" : "state IN (\(placeholders(list.count)))")
            binds += list.map { SQLiteData($0) }
        }
        if let names = query.names {
            let condition = Self.nameCondition(.only(names), column: "name")
            conditions.append(condition.sql)
            binds += condition.binds
        }
        if let after = query.after {
            conditions.append("id > ?")
            binds.append(SQLiteData(after.rawValue))
        }
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        binds.append(SQLiteData(max(0, query.limit)))
        return try await withReader { [binds] db in
            let rows = try db.rows("SELECT \(Self.recordColumns) FROM jobs \(whereClause) ORDER BY id LIMIT ?", binds)
            return try Self.records(rows, db)
        }
    }

    /// Records from rows, with the dependencies of each.
    private static func records(_ rows: [SQLiteRow], _ db: Database) throws -> [JobRecord] {
        guard !rows.isEmpty else { return [] }
        let ids = try rows.map { try $0.int64("id") }
        var dependencies: [Int64: [JobID]] = [:]
        for chunk in ids.chunked(500) {
            let dependencyRows = try db.rows(
                """
                SELECT job_id, depends_on FROM job_dependencies WHERE job_id IN (\(placeholders(chunk.count)))
                ORDER BY job_id, depends_on
                """,
                chunk.map { SQLiteData($0) }
            )
            for row in dependencyRows {
                dependencies[try row.int64("job_id"), default: []].append(JobID(try row.int64("depends_on")))
            }
        }
        return try rows.map { row in
            try JobRecord(row: row, dependencies: dependencies[try row.int64("id")] ?? [])
        }
    }

    public func status() async throws -> JobStoreStatus {
        try checkOpen()
        let now = SQLiteTime.now
        return try await withReader { db in
            let stateRows = try db.rows(
                """
                SELECT state, count(*) AS jobs, COALESCE(sum(units_done), 0) AS done, COALESCE(sum(units_total), 0) AS total
                FROM jobs GROUP BY state
                """
            )
            var byState: [StoredJobState: JobStoreStatus.StateSummary] = [:]
            for row in stateRows {
                let state = try row.state()
                byState[state] = JobStoreStatus.StateSummary(
                    state: state,
                    jobs: try row.int("jobs"),
                    completedUnits: try row.int64("done"),
                    totalUnits: try row.int64("total")
                )
            }
            let scheduledRows = try db.rows(
                "SELECT count(*) AS n FROM jobs WHERE state = 'available' AND run_at > ?",
                [SQLiteData(now)]
            )
            let runningRows = try db.rows(
                """
                SELECT id, name, attempt, owner, progress, units_done, units_total, started_at, lease_until, cancel_requested
                FROM jobs WHERE state = 'running' ORDER BY owner, id
                """
            )
            var workers: [JobStoreStatus.WorkerSummary] = []
            for row in runningRows {
                let owner = row.optionalString("owner") ?? "?"
                let job = try JobStoreStatus.RunningJob(row: row)
                if workers.last?.worker == owner {
                    workers[workers.count - 1].jobs.append(job)
                } else {
                    workers.append(JobStoreStatus.WorkerSummary(worker: owner, jobs: [job]))
                }
            }
            let limitRows = try db.rows(
                """
                SELECT l.key AS key, l.max_running AS max_running,
                    (SELECT count(*) FROM jobs r WHERE r.state = 'running' AND r.concurrency_key = l.key) AS running
                FROM job_limits l ORDER BY l.key
                """
            )
            return JobStoreStatus(
                takenAt: SQLiteTime.date(now),
                states: StoredJobState.allCases.map {
                    byState[$0] ?? JobStoreStatus.StateSummary(state: $0, jobs: 0, completedUnits: 0, totalUnits: 0)
                },
                scheduled: try scheduledRows.first?.int("n") ?? 0,
                workers: workers,
                limits: try limitRows.map {
                    JobStoreStatus.LimitSummary(
                        key: try $0.string("key"),
                        limit: try $0.int("max_running"),
                        running: try $0.int("running")
                    )
                }
            )
        }
    }

    public func delayUntilNextJob(names: JobNameFilter) async throws -> Duration? {
        try checkOpen()
        let filter = Self.nameCondition(names, column: "name")
        let next = try await withReader { db in
            try db.rows(
                "SELECT min(run_at) AS next FROM jobs WHERE state = 'available' AND \(filter.sql)",
                filter.binds,
                prepared: true
            ).first?.optionalInt64("next")
        }
        guard let next else { return nil }
        return .microseconds(max(0, next - SQLiteTime.now))
    }

    public func setConcurrencyLimit(_ limit: Int?, forKey key: String) async throws {
        try JobRequestBatches.validate(limit, forKey: key)
        if let limit {
            try await withWriter { db in try Self.setLimit(limit, forKey: key, db) }
        } else {
            try await withWriter { db in
                try db.run("DELETE FROM job_limits WHERE key = ?", [SQLiteData(key)])
            }
        }
        forgetLimitsCache()
        changes.signal()
    }

    /// Sets one limit on `db`, inside the caller's transaction if there is one.
    static func setLimit(_ limit: Int, forKey key: String, _ db: Database) throws {
        try db.run(
            """
            INSERT INTO job_limits (key, max_running) VALUES (?, ?)
            ON CONFLICT (key) DO UPDATE SET max_running = excluded.max_running
            """,
            [SQLiteData(key), SQLiteData(limit)]
        )
    }

    public func concurrencyLimits() async throws -> [String: Int] {
        try checkOpen()
        return try await withReader { db in
            var limits: [String: Int] = [:]
            for row in try db.rows("SELECT key, max_running FROM job_limits") {
                limits[try row.string("key")] = try row.int("max_running")
            }
            return limits
        }
    }

    public func pruneFinishedJobs(before date: Date) async throws -> Int {
        try await transaction { db in
            // A finished job that a waiting job still depends on stays: its state decides the waiting one.
            let rows = try db.rows(
                """
                DELETE FROM jobs
                WHERE finished_at IS NOT NULL AND finished_at < ?
                    AND state IN ('succeeded', 'failed', 'canceled', 'discarded')
                    AND NOT EXISTS (
                        SELECT 1 FROM job_dependencies d JOIN jobs w ON w.id = d.job_id
                        WHERE d.depends_on = jobs.id AND w.state = 'waiting'
                    )
                RETURNING id
                """,
                [SQLiteData(SQLiteTime.micros(date))]
            )
            _ = try db.rows(
                """
                DELETE FROM job_dependencies
                WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = job_dependencies.job_id)
                """
            )
            return rows.count
        }
    }
}
