import Foundation
import PostgresNIO
import YXJobStore

extension PostgresJobStore {
    static let recordColumns = """
        id, name, state, payload, attempt, failures, lease_expiries, max_attempts, retry_initial_ms, retry_max_ms,
        retry_jitter, retry_max_after_ms, retry_scope, timeout_ms, priority, concurrency_key, unique_key, created_at,
        run_at, started_at, finished_at, owner, lease_until, cancel_requested, progress, units_done, units_total,
        message, result
        """

    public func job(_ id: JobID) async throws -> JobRecord? {
        var binds = PostgresBindings()
        binds.append(id.rawValue)
        let found = try await rows("SELECT \(Self.recordColumns) FROM \(schema).jobs WHERE id = $1", binds)
        return try await records(found).first
    }

    public func jobs(_ query: JobQuery) async throws -> [JobRecord] {
        var conditions: [String] = []
        var binds = PostgresBindings()
        if let states = query.states {
            binds.append(states.map(\.rawValue).sorted())
            conditions.append("state = ANY($\(binds.count)::text[])")
        }
        if let names = query.names {
            binds.append(names)
            conditions.append("name = ANY($\(binds.count)::text[])")
        }
        if let after = query.after {
            binds.append(after.rawValue)
            conditions.append("id > $\(binds.count)")
        }
        binds.append(max(0, query.limit))
        let whereClause = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let found = try await rows(
            "SELECT \(Self.recordColumns) FROM \(schema).jobs \(whereClause) ORDER BY id LIMIT $\(binds.count)",
            binds
        )
        return try await records(found)
    }

    private func records(_ found: [PostgresRandomAccessRow]) async throws -> [JobRecord] {
        guard !found.isEmpty else { return [] }
        let ids = try found.map { try $0["id"].decode(Int64.self) }
        var binds = PostgresBindings()
        binds.append(ids)
        let edges = try await rows(
            """
            SELECT job_id, depends_on FROM \(schema).job_dependencies WHERE job_id = ANY($1)
            ORDER BY job_id, depends_on
            """,
            binds
        )
        var dependencies: [Int64: [JobID]] = [:]
        for edge in edges {
            dependencies[try edge["job_id"].decode(Int64.self), default: []]
                .append(JobID(try edge["depends_on"].decode(Int64.self)))
        }
        return try found.map { row in
            try JobRecord(row: row, dependencies: dependencies[try row.int64("id")] ?? [])
        }
    }

    public func status() async throws -> JobStoreStatus {
        let clock = try await rows("SELECT now() AS now")
        let takenAt = try clock.first?["now"].decode(Date.self) ?? Date()
        let stateRows = try await rows(
            """
            SELECT state, count(*)::bigint AS jobs, COALESCE(sum(units_done), 0)::bigint AS done,
                COALESCE(sum(units_total), 0)::bigint AS total
            FROM \(schema).jobs GROUP BY state
            """
        )
        var byState: [StoredJobState: JobStoreStatus.StateSummary] = [:]
        for row in stateRows {
            let state = try row.state()
            byState[state] = JobStoreStatus.StateSummary(
                state: state,
                jobs: try row["jobs"].decode(Int.self),
                completedUnits: try row["done"].decode(Int64.self),
                totalUnits: try row["total"].decode(Int64.self)
            )
        }
        let scheduled = try await rows(
            "SELECT count(*)::bigint AS n FROM \(schema).jobs WHERE state = 'available' AND run_at > now()"
        )
        let running = try await rows(
            """
            SELECT id, name, attempt, owner, progress, units_done, units_total, started_at, lease_until, cancel_requested
            FROM \(schema).jobs WHERE state = 'running' ORDER BY owner, id
            """
        )
        var workers: [JobStoreStatus.WorkerSummary] = []
        for row in running {
            let owner = try row["owner"].decode(String?.self) ?? "?"
            let job = try JobStoreStatus.RunningJob(row: row)
            if workers.last?.worker == owner {
                workers[workers.count - 1].jobs.append(job)
            } else {
                workers.append(JobStoreStatus.WorkerSummary(worker: owner, jobs: [job]))
            }
        }
        let limits = try await rows(
            """
            SELECT l.key, l.max_running,
                (SELECT count(*) FROM \(schema).jobs r WHERE r.state = 'running' AND r.concurrency_key = l.key)::bigint
                    AS running
            FROM \(schema).job_limits l ORDER BY l.key
            """
        )
        return JobStoreStatus(
            takenAt: takenAt,
            states: StoredJobState.allCases.map {
                byState[$0] ?? JobStoreStatus.StateSummary(state: $0, jobs: 0, completedUnits: 0, totalUnits: 0)
            },
            scheduled: try scheduled.first?["n"].decode(Int.self) ?? 0,
            workers: workers,
            limits: try limits.map {
                JobStoreStatus.LimitSummary(
                    key: try $0["key"].decode(String.self),
                    limit: try $0["max_running"].decode(Int.self),
                    running: try $0["running"].decode(Int.self)
                )
            }
        )
    }

    public func delayUntilNextJob(names: JobNameFilter) async throws -> Duration? {
        var binds = PostgresBindings()
        let condition: String
        switch names {
        case .only(let list):
            binds.append(list)
            condition = "name = ANY($1::text[])"
        case .allExcept(let list):
            binds.append(list)
            condition = "NOT (name = ANY($1::text[]))"
        }
        let found = try await rows(
            """
            SELECT EXTRACT(EPOCH FROM (min(run_at) - now()))::float8 AS seconds
            FROM \(schema).jobs WHERE state = 'available' AND \(condition)
            """,
            binds
        )
        guard let seconds = try found.first?["seconds"].decode(Double?.self) else { return nil }
        return .seconds(max(0, seconds))
    }

    /// Sets one limit on `connection`, inside the caller's transaction.
    func setLimit(_ limit: Int, forKey key: String, on connection: PostgresConnection) async throws {
        var binds = PostgresBindings()
        binds.append(key)
        binds.append(limit)
        _ = try await rows(
            on: connection,
            """
            INSERT INTO \(schema).job_limits (key, max_running) VALUES ($1, $2)
            ON CONFLICT (key) DO UPDATE SET max_running = excluded.max_running
            """,
            binds
        )
    }

    public func setConcurrencyLimit(_ limit: Int?, forKey key: String) async throws {
        try JobRequestBatches.validate(limit, forKey: key)
        try await transaction(durable: true) { connection in
            if let limit {
                try await self.setLimit(limit, forKey: key, on: connection)
            } else {
                var binds = PostgresBindings()
                binds.append(key)
                _ = try await self.rows(on: connection, "DELETE FROM \(self.schema).job_limits WHERE key = $1", binds)
            }
        }
        forgetLimitsCache()
        await notifyChange()
    }

    public func concurrencyLimits() async throws -> [String: Int] {
        try Self.limits(in: try await rows("SELECT key, max_running FROM \(schema).job_limits"))
    }

    /// Limits by key, from rows of `key` and `max_running`.
    static func limits(in rows: [PostgresRandomAccessRow]) throws -> [String: Int] {
        var limits: [String: Int] = [:]
        for row in rows {
            limits[try row["key"].decode(String.self)] = try row["max_running"].decode(Int.self)
        }
        return limits
    }

    public func pruneFinishedJobs(before date: Date) async throws -> Int {
        try await transaction { connection in
            var binds = PostgresBindings()
            binds.append(date)
            let deleted = try await self.rows(
                on: connection,
                """
                DELETE FROM \(self.schema).jobs j
                WHERE j.finished_at IS NOT NULL AND j.finished_at < $1
                    AND j.state IN ('succeeded', 'failed', 'canceled', 'discarded')
                    AND NOT EXISTS (
                        SELECT 1 FROM \(self.schema).job_dependencies d JOIN \(self.schema).jobs w ON w.id = d.job_id
                        WHERE d.depends_on = j.id AND w.state = 'waiting'
                    )
                RETURNING j.id
                """,
                binds
            )
            var idBinds = PostgresBindings()
            idBinds.append(try deleted.map { try $0["id"].decode(Int64.self) })
            _ = try await self.rows(
                on: connection,
                "DELETE FROM \(self.schema).job_dependencies WHERE job_id = ANY($1)",
                idBinds
            )
            return deleted.count
        }
    }
}
