import Foundation
import PostgresNIO
import YXJobStore

extension PostgresJobStore {
    static let claimedColumns = """
        j.id, j.name, j.payload, j.attempt, j.failures, j.max_attempts, j.retry_initial_ms, j.retry_max_ms,
        j.retry_jitter, j.retry_max_after_ms, j.retry_scope, j.timeout_ms, j.priority, j.concurrency_key, j.created_at,
        j.run_at
        """

    // MARK: - Claim

    public func claim(_ request: ClaimRequest) async throws -> [ClaimedJob] {
        guard request.limit > 0 else { return [] }
        if case .only(let names) = request.names, names.isEmpty { return [] }
        var rows = try await claimUnlimited(request)
        if rows.count < request.limit, try await mayHaveLimits() {
            var limited = request
            limited.limit = request.limit - rows.count
            rows += try await claimLimited(limited)
        }
        let jobs = try rows.map { row in
            try ClaimedJob(row: row, owner: request.owner)
        }
        return jobs.sorted { ($0.priority, $1.readyAt, $1.id) > ($1.priority, $0.readyAt, $0.id) }
    }

    /// `name = ANY($n)` or its negation.
    private func nameCondition(_ names: JobNameFilter, column: String, parameter: Int) -> (String, [String]) {
        switch names {
        case .only(let list): ("\(column) = ANY($\(parameter)::text[])", list)
        case .allExcept(let list): ("NOT (\(column) = ANY($\(parameter)::text[]))", list)
        }
    }

    /// Jobs of keys without a limit: one statement kept compiled (``ClaimNamed``, ``ClaimAllExcept``), no
    /// waiting on other claimers.
    private func claimUnlimited(_ request: ClaimRequest) async throws -> [PostgresRandomAccessRow] {
        var binds = PostgresBindings()
        binds.append(request.owner)
        binds.append(request.leaseDuration.storedMicroseconds)
        switch request.names {
        case .only(let names) where names.count == 1 && request.limit == 1:
            binds.append(names[0])
            return try await rows(prepared: ClaimOneNamed(bindings: binds))
        case .only(let names):
            binds.append(names)
            binds.append(request.limit)
            return try await rows(prepared: ClaimNamed(bindings: binds))
        case .allExcept(let names):
            binds.append(names)
            binds.append(request.limit)
            return try await rows(prepared: ClaimAllExcept(bindings: binds))
        }
    }

    /// Jobs of limited keys: in one transaction, lock the rows of the limits that have ready jobs (skipping
    /// those another claimer holds), then claim at most each one's room. Every claim of a limited key
    /// holds its limit's row, and the claim statement starts after the lock was taken, so the running
    /// count it reads includes every earlier claim: limits hold across all workers.
    private func claimLimited(_ request: ClaimRequest) async throws -> [PostgresRandomAccessRow] {
        try await transaction { connection in
            let (keyCondition, names) = self.nameCondition(request.names, column: "a.name", parameter: 1)
            var lockBinds = PostgresBindings()
            lockBinds.append(names)
            let locked = try await self.rows(
                on: connection,
                """
                SELECT l.key FROM \(self.schema).job_limits l
                WHERE EXISTS (
                    SELECT 1 FROM \(self.schema).jobs a
                    WHERE a.state = 'available' AND a.concurrency_key = l.key AND a.run_at <= now() AND \(keyCondition)
                )
                ORDER BY l.key
                FOR UPDATE OF l SKIP LOCKED
                """,
                lockBinds
            )
            let keys = try locked.map { try $0["key"].decode(String.self) }
            guard !keys.isEmpty else { return [] }
            let (condition, _) = self.nameCondition(request.names, column: "x.name", parameter: 4)
            var binds = PostgresBindings()
            binds.append(request.owner)
            binds.append(request.leaseDuration.storedMicroseconds)
            binds.append(keys)
            binds.append(names)
            binds.append(request.limit)
            return try await self.rows(
                on: connection,
                """
                UPDATE \(self.schema).jobs j SET state = 'running', attempt = j.attempt + 1, owner = $1,
                    lease_until = now() + $2 * interval '1 microsecond', started_at = now(),
                    progress = NULL, units_done = NULL, units_total = NULL
                FROM (
                    SELECT c.id FROM \(self.schema).job_limits l
                    CROSS JOIN LATERAL (
                        SELECT x.id, x.priority, x.run_at FROM \(self.schema).jobs x
                        WHERE x.state = 'available' AND x.concurrency_key = l.key AND x.run_at <= now()
                            AND \(condition)
                        ORDER BY x.priority DESC, x.run_at, x.id
                        LIMIT GREATEST(0, l.max_running - (
                            SELECT count(*) FROM \(self.schema).jobs r
                            WHERE r.state = 'running' AND r.concurrency_key = l.key
                        ))
                        FOR UPDATE OF x SKIP LOCKED
                    ) c
                    WHERE l.key = ANY($3::text[])
                    ORDER BY c.priority DESC, c.run_at, c.id
                    LIMIT $5
                ) picked
                WHERE j.id = picked.id
                RETURNING \(Self.claimedColumns)
                """,
                binds
            )
        }
    }

    // MARK: - Heartbeat and checks

    public func heartbeat(_ heartbeats: [JobHeartbeat], leaseDuration: Duration) async throws -> LeaseCheck {
        guard !heartbeats.isEmpty else { return LeaseCheck() }
        // Rows in identifier order, as outcomes take them: two writes of one worker never wait on each
        // other in opposite orders.
        let heartbeats = heartbeats.sorted { $0.lease.id < $1.lease.id }
        var binds = PostgresBindings()
        binds.append(heartbeats.map(\.lease.id.rawValue))
        binds.append(heartbeats.map(\.lease.attempt))
        binds.append(heartbeats.map(\.lease.owner))
        binds.append(heartbeats.map { $0.progress != nil })
        binds.append(heartbeats.map { $0.progress?.fraction ?? -1 })
        binds.append(heartbeats.map { $0.progress?.completedUnits ?? -1 })
        binds.append(heartbeats.map { $0.progress?.totalUnits ?? -1 })
        binds.append(leaseDuration.storedMicroseconds)
        let renewed = try await rows(
            """
            UPDATE \(schema).jobs j SET lease_until = now() + $8 * interval '1 microsecond',
                progress = CASE WHEN v.has_progress THEN NULLIF(v.progress, -1) ELSE j.progress END,
                units_done = CASE WHEN v.has_progress THEN NULLIF(v.units_done, -1) ELSE j.units_done END,
                units_total = CASE WHEN v.has_progress THEN NULLIF(v.units_total, -1) ELSE j.units_total END
            FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::bool[], $5::float8[], $6::bigint[], $7::bigint[])
                AS v(id, attempt, owner, has_progress, progress, units_done, units_total)
            WHERE j.id = v.id AND j.attempt = v.attempt AND j.owner = v.owner AND j.state = 'running'
            RETURNING j.id, j.cancel_requested
            """,
            binds
        )
        var canceled: [Int64: Bool] = [:]
        for row in renewed {
            canceled[try row["id"].decode(Int64.self)] = try row["cancel_requested"].decode(Bool.self)
        }
        return LeaseCheck(
            lost: heartbeats.map(\.lease).filter { canceled[$0.id.rawValue] == nil },
            cancelRequested: heartbeats.compactMap { canceled[$0.lease.id.rawValue] == true ? $0.lease.id : nil }
        )
    }

    public func checkLeases(_ leases: [JobLease]) async throws -> LeaseCheck {
        guard !leases.isEmpty else { return LeaseCheck() }
        var binds = PostgresBindings()
        binds.append(leases.map(\.id.rawValue))
        let found = try await rows(
            "SELECT id, attempt, owner, state, cancel_requested FROM \(schema).jobs WHERE id = ANY($1)",
            binds
        )
        var byID: [Int64: PostgresRandomAccessRow] = [:]
        for row in found { byID[try row["id"].decode(Int64.self)] = row }
        var check = LeaseCheck()
        for lease in leases {
            guard let row = byID[lease.id.rawValue], try row.state() == .running,
                try row["attempt"].decode(Int.self) == lease.attempt,
                try row["owner"].decode(String?.self) == lease.owner
            else {
                check.lost.append(lease)
                continue
            }
            if try row["cancel_requested"].decode(Bool.self) { check.cancelRequested.append(lease.id) }
        }
        return check
    }

    // MARK: - Outcomes

    /// The parameters of ``RecordOutcome`` (`oneEach`: the only completion's values) or of
    /// ``RecordOutcomes`` (one array per column, in the order of `completions`).
    private static func outcomeBindings(_ completions: [JobCompletion], oneEach: Bool) throws -> PostgresBindings {
        var binds = PostgresBindings()
        func column<Value: PostgresArrayEncodable>(_ value: (JobCompletion) -> Value) throws {
            if oneEach { try binds.append(value(completions[0])) } else { try binds.append(completions.map(value)) }
        }
        try column { $0.lease.id.rawValue }
        try column { $0.lease.attempt }
        try column { $0.lease.owner }
        try column { $0.outcome.resultingState.rawValue }
        try column { $0.outcome.message ?? "" }
        try column { completion -> Int64 in
            switch completion.outcome {
            case .retry(let after, _), .released(let after): return after.storedMicroseconds
            default: return 0
            }
        }
        try column { completion -> Int in
            switch completion.outcome {
            case .retry, .failed: 1
            default: 0
            }
        }
        try column { $0.progress != nil }
        try column { $0.progress?.fraction ?? -1 }
        try column { $0.progress?.completedUnits ?? -1 }
        try column { $0.progress?.totalUnits ?? -1 }
        try column { $0.result != nil }
        try column { ByteBuffer(bytes: $0.result ?? Data()) }
        return binds
    }

    public func complete(_ completions: [JobCompletion]) async throws -> [JobLease] {
        guard !completions.isEmpty else { return [] }
        let completions = completions.sorted { $0.lease.id < $1.lease.id }
        let recorded =
            completions.count == 1
            ? try await rows(prepared: RecordOutcome(bindings: try Self.outcomeBindings(completions, oneEach: true)))
            : try await rows(prepared: RecordOutcomes(bindings: try Self.outcomeBindings(completions, oneEach: false)))
        var accepted: Set<Int64> = []
        var succeededWithDependents: [Int64] = []
        var endedWithDependents: [Int64] = []
        var backToAvailable = false
        for row in recorded {
            let id = try row["id"].decode(Int64.self)
            accepted.insert(id)
            let state = try row.state()
            if state == .available { backToAvailable = true }
            guard try row["has_dependents"].decode(Bool.self) else { continue }
            switch state {
            case .succeeded: succeededWithDependents.append(id)
            case .failed, .canceled, .discarded: endedWithDependents.append(id)
            default: break
            }
        }
        var released = 0
        if !succeededWithDependents.isEmpty || !endedWithDependents.isEmpty {
            // A crash between the outcome and this leaves dependents waiting until the next sweep.
            let succeeded = succeededWithDependents
            let ended = endedWithDependents
            released = try await transaction { connection in
                let released = try await self.releaseDependents(of: succeeded, on: connection)
                _ = try await self.cancelDependents(of: ended, on: connection)
                return released
            }
        }
        // Retries, releases and freed limit slots may let waiting workers claim.
        let limited = (try? await mayHaveLimits()) ?? true
        if backToAvailable || released > 0 || limited {
            await notifyChange()
        } else {
            changes.signal()
        }
        return completions.map(\.lease).filter { lease in
            guard accepted.contains(lease.id.rawValue) else { return true }
            return false
        }
    }

    // MARK: - Recovery and dependencies

    public func recoverExpiredLeases() async throws -> Int {
        let recovered = try await rows(
            """
            UPDATE \(schema).jobs j SET
                state = CASE WHEN j.cancel_requested THEN 'canceled'
                    WHEN j.failures + 1 >= j.max_attempts THEN 'failed' ELSE 'available' END,
                finished_at = CASE WHEN j.cancel_requested OR j.failures + 1 >= j.max_attempts THEN now() END,
                run_at = CASE WHEN j.cancel_requested OR j.failures + 1 >= j.max_attempts THEN j.run_at ELSE now() END,
                message = 'the lease of ' || COALESCE(j.owner, 'a worker') || ' expired during attempt ' || j.attempt,
                failures = j.failures + 1, lease_expiries = j.lease_expiries + 1, owner = NULL, lease_until = NULL
            FROM (
                SELECT id FROM \(schema).jobs
                WHERE state = 'running' AND lease_until < now()
                ORDER BY id LIMIT 1000
                FOR UPDATE SKIP LOCKED
            ) expired
            WHERE j.id = expired.id
            RETURNING j.id, j.state, j.has_dependents
            """
        )
        guard !recovered.isEmpty else { return 0 }
        var ended: [Int64] = []
        for row in recovered where try row["has_dependents"].decode(Bool.self) {
            if try row.state().isTerminal { ended.append(try row["id"].decode(Int64.self)) }
        }
        if !ended.isEmpty {
            let doomed = ended
            _ = try await transaction { connection in
                try await self.cancelDependents(of: doomed, on: connection)
            }
        }
        await notifyChange()
        return recovered.count
    }

    public func resolveDependencies() async throws -> Int {
        let changed = try await transaction { connection in
            let released = try await self.rows(
                on: connection,
                """
                UPDATE \(self.schema).jobs j SET state = 'available'
                WHERE j.state = 'waiting' AND NOT EXISTS (
                    SELECT 1 FROM \(self.schema).job_dependencies d JOIN \(self.schema).jobs p ON p.id = d.depends_on
                    WHERE d.job_id = j.id AND p.state <> 'succeeded'
                )
                RETURNING j.id
                """
            )
            let doomed = try await self.rows(
                on: connection,
                """
                SELECT DISTINCT d.depends_on AS id FROM \(self.schema).jobs w
                JOIN \(self.schema).job_dependencies d ON d.job_id = w.id
                JOIN \(self.schema).jobs p ON p.id = d.depends_on
                WHERE w.state = 'waiting' AND p.state IN ('failed', 'canceled', 'discarded')
                """
            )
            let canceled = try await self.cancelDependents(
                of: try doomed.map { try $0["id"].decode(Int64.self) },
                on: connection
            )
            return released.count + canceled
        }
        if changed > 0 { await notifyChange() }
        return changed
    }

    /// Makes available the waiting dependents of `succeeded` whose prerequisites all succeeded.
    func releaseDependents(of succeeded: [Int64], on connection: PostgresConnection) async throws -> Int {
        guard !succeeded.isEmpty else { return 0 }
        var binds = PostgresBindings()
        binds.append(succeeded)
        let released = try await rows(
            on: connection,
            """
            UPDATE \(schema).jobs j SET state = 'available'
            WHERE j.state = 'waiting'
                AND j.id IN (SELECT job_id FROM \(schema).job_dependencies WHERE depends_on = ANY($1))
                AND NOT EXISTS (
                    SELECT 1 FROM \(schema).job_dependencies d JOIN \(schema).jobs p ON p.id = d.depends_on
                    WHERE d.job_id = j.id AND p.state <> 'succeeded'
                )
            RETURNING j.id
            """,
            binds
        )
        return released.count
    }

    /// Cancels the waiting jobs that depend, directly or through others, on jobs that ended without
    /// success.
    func cancelDependents(of ended: [Int64], on connection: PostgresConnection) async throws -> Int {
        guard !ended.isEmpty else { return 0 }
        var binds = PostgresBindings()
        binds.append(ended)
        let canceled = try await rows(
            on: connection,
            """
            WITH RECURSIVE doomed(id, root) AS (
                SELECT job_id, depends_on FROM \(schema).job_dependencies WHERE depends_on = ANY($1)
                UNION
                SELECT d.job_id, doomed.root FROM \(schema).job_dependencies d JOIN doomed ON d.depends_on = doomed.id
            ),
            roots AS (SELECT id, min(root) AS root FROM doomed GROUP BY id)
            UPDATE \(schema).jobs j SET state = 'canceled', finished_at = now(),
                message = 'prerequisite ' || roots.root || ' did not succeed'
            FROM roots
            WHERE j.id = roots.id AND j.state = 'waiting'
            RETURNING j.id
            """,
            binds
        )
        return canceled.count
    }

    // MARK: - Cancel

    public func cancel(_ id: JobID, reason: String) async throws -> CancelResult {
        let result = try await transaction(durable: true) { connection -> CancelResult in
            var binds = PostgresBindings()
            binds.append(id.rawValue)
            binds.append(reason)
            let updated = try await self.rows(
                on: connection,
                """
                UPDATE \(self.schema).jobs SET
                    state = CASE WHEN state = 'running' THEN 'running' ELSE 'canceled' END,
                    finished_at = CASE WHEN state = 'running' THEN finished_at ELSE now() END,
                    cancel_requested = true, message = $2
                WHERE id = $1 AND state IN ('waiting', 'available', 'running')
                RETURNING state, has_dependents
                """,
                binds
            )
            if let row = updated.first {
                guard try row.state() == .canceled else { return .requested }
                if try row["has_dependents"].decode(Bool.self) {
                    _ = try await self.cancelDependents(of: [id.rawValue], on: connection)
                }
                return .canceled
            }
            var idBinds = PostgresBindings()
            idBinds.append(id.rawValue)
            let existing = try await self.rows(
                on: connection,
                "SELECT state FROM \(self.schema).jobs WHERE id = $1",
                idBinds
            )
            guard let row = existing.first else { return .notFound }
            return .alreadyFinished(try row.state())
        }
        changes.signal()
        return result
    }
}
