import Foundation
import GRDB
import YXJobStore

extension SQLiteJobStore {
    static let claimedColumns = """
        id, name, payload, attempt, failures, max_attempts, retry_initial_ms, retry_max_ms, retry_jitter,
        retry_max_after_ms, retry_scope, timeout_ms, priority, concurrency_key, created_at, run_at
        """

    // MARK: - Claim

    public func claim(_ request: ClaimRequest) async throws -> [ClaimedJob] {
        guard Self.asksForJobs(request) else { return [] }
        if try await mayHaveLimits() {
            return try await transaction { db in try Self.claimJobs(request, limited: true, db) }
        }
        // One statement: SQLite takes the write lock when it starts, so no BEGIN is needed.
        return try await withWriter { db in try Self.claimJobs(request, limited: false, db) }
    }

    /// Whether a claim can take anything at all.
    private static func asksForJobs(_ request: ClaimRequest) -> Bool {
        guard request.limit > 0 else { return false }
        if case .only(let names) = request.names, names.isEmpty { return false }
        return true
    }

    /// Claims on the writer connection; with `limited`, reads the limits first (inside a transaction).
    package static func claimJobs(_ request: ClaimRequest, limited: Bool, _ db: Database) throws -> [ClaimedJob] {
        let now = SQLiteTime.now
        let rows: [SQLiteRow]
        if limited {
            let keys = try limitedKeysWithRoom(request.names, now: now, db)
            let statement = claimStatement(request, now: now, limitedKeys: keys)
            rows = try db.rows(statement.sql, statement.binds)
        } else {
            // Its text depends only on the names asked for, which a worker keeps: compiled once, then reused.
            let statement = claimStatement(request, now: now, limitedKeys: [])
            rows = try db.rows(statement.sql, statement.binds, prepared: true)
        }
        return try rows.map { try ClaimedJob(row: $0, owner: request.owner) }
            .sorted { ($0.priority, $1.readyAt, $1.id) > ($1.priority, $0.readyAt, $0.id) }
    }

    /// Limited keys that have room and ready jobs of these names, with the room of each.
    private static func limitedKeysWithRoom(
        _ names: JobNameFilter,
        now: Int64,
        _ db: Database
    ) throws -> [(key: String, room: Int)] {
        let filter = nameCondition(names, column: "a.name")
        let rows = try db.rows(
            """
            SELECT key, room FROM (
                SELECT l.key AS key, l.max_running - (
                    SELECT count(*) FROM jobs r WHERE r.state = 'running' AND r.concurrency_key = l.key
                ) AS room
                FROM job_limits l
                WHERE EXISTS (
                    SELECT 1 FROM jobs a
                    WHERE a.state = 'available' AND a.concurrency_key = l.key AND a.run_at <= ? AND \(filter.sql)
                )
            ) WHERE room > 0
            """,
            [SQLiteData(now)] + filter.binds
        )
        var keys = try rows.map { (key: try $0.string("key"), room: try $0.int("room")) }
        // A compound SELECT has at most 500 terms; take a random share of many keys, fairly over claims.
        if keys.count > 200 {
            keys.shuffle()
            keys = Array(keys.prefix(200))
        }
        return keys
    }

    /// The claim: ready jobs of unlimited keys, and of each limited key at most its room, in priority order.
    private static func claimStatement(
        _ request: ClaimRequest,
        now: Int64,
        limitedKeys: [(key: String, room: Int)]
    ) -> (sql: String, binds: [SQLiteData]) {
        if limitedKeys.isEmpty, case .only(let names) = request.names, names.count == 1 {
            // The common claim, in its shortest form (the general one below walks a list of names).
            return (
                """
                UPDATE jobs SET state = 'running', attempt = attempt + 1, owner = ?, lease_until = ?, started_at = ?,
                    progress = NULL, units_done = NULL, units_total = NULL
                WHERE id IN (
                    SELECT id FROM jobs
                    WHERE state = 'available' AND name = ? AND run_at <= ?
                        AND concurrency_key NOT IN (SELECT key FROM job_limits)
                    ORDER BY priority DESC, run_at, id LIMIT ?
                )
                RETURNING \(claimedColumns)
                """,
                [
                    SQLiteData(request.owner), SQLiteData(now + request.leaseDuration.storedMicroseconds),
                    SQLiteData(now), SQLiteData(names[0]), SQLiteData(now), SQLiteData(request.limit),
                ]
            )
        }
        let filter = nameCondition(request.names, column: "j.name")
        var binds: [SQLiteData] = [
            SQLiteData(request.owner),
            SQLiteData(now + request.leaseDuration.storedMicroseconds),
            SQLiteData(now),
        ]
        // One select per name: each walks its name's index in order and stops after `limit` rows,
        // where `name IN (…)` over several names would sort every ready job of them.
        var selects: [String] = []
        func unlimited(_ condition: String) -> String {
            """
            SELECT * FROM (
                SELECT j.id, j.priority, j.run_at FROM jobs j
                WHERE j.state = 'available' AND j.run_at <= ? AND \(condition)
                    AND NOT EXISTS (SELECT 1 FROM job_limits l WHERE l.key = j.concurrency_key)
                ORDER BY j.priority DESC, j.run_at, j.id LIMIT ?
            )
            """
        }
        switch request.names {
        case .only(let names):
            for name in names {
                selects.append(unlimited("j.name = ?"))
                binds += [SQLiteData(now), SQLiteData(name), SQLiteData(request.limit)]
            }
        case .allExcept:
            selects.append(unlimited(filter.sql))
            binds += [SQLiteData(now)] + filter.binds + [SQLiteData(request.limit)]
        }
        for (key, room) in limitedKeys {
            selects.append(
                """
                SELECT * FROM (
                    SELECT j.id, j.priority, j.run_at FROM jobs j
                    WHERE j.state = 'available' AND j.concurrency_key = ? AND j.run_at <= ? AND \(filter.sql)
                    ORDER BY j.priority DESC, j.run_at, j.id LIMIT ?
                )
                """
            )
            binds += [SQLiteData(key), SQLiteData(now)] + filter.binds + [SQLiteData(min(room, request.limit))]
        }
        binds.append(SQLiteData(request.limit))
        let sql = """
            UPDATE jobs SET state = 'running', attempt = attempt + 1, owner = ?, lease_until = ?, started_at = ?,
                progress = NULL, units_done = NULL, units_total = NULL
            WHERE id IN (
                SELECT id FROM (\(selects.joined(separator: " UNION ALL ")))
                ORDER BY priority DESC, run_at, id LIMIT ?
            )
            RETURNING \(claimedColumns)
            """
        return (sql, binds)
    }

    /// `name IN (…)` or `name NOT IN (…)` for a filter.
    static func nameCondition(_ names: JobNameFilter, column: String) -> (sql: String, binds: [SQLiteData]) {
        switch names {
        case .only(let list):
            if list.isEmpty { return ("0", []) }
            return ("\(column) IN (\(placeholders(list.count)))", list.map { SQLiteData($0) })
        case .allExcept(let list):
            if list.isEmpty { return ("1", []) }
            return ("\(column) NOT IN (\(placeholders(list.count)))", list.map { SQLiteData($0) })
        }
    }

    // MARK: - Heartbeat and checks

    public func heartbeat(_ heartbeats: [JobHeartbeat], leaseDuration: Duration) async throws -> LeaseCheck {
        guard !heartbeats.isEmpty else { return LeaseCheck() }
        var renewed: [Int64: Bool] = [:]
        for chunk in heartbeats.chunked(500) {
            let values = rowPlaceholders(7, count: chunk.count)
            var binds: [SQLiteData] = []
            for beat in chunk {
                binds += [
                    SQLiteData(beat.lease.id.rawValue), SQLiteData(beat.lease.attempt), SQLiteData(beat.lease.owner),
                    SQLiteData(beat.progress == nil ? 0 : 1), SQLiteData(optional: beat.progress?.fraction),
                    SQLiteData(optional: beat.progress?.completedUnits), SQLiteData(optional: beat.progress?.totalUnits),
                ]
            }
            let leaseUntil = SQLiteData(SQLiteTime.now + leaseDuration.storedMicroseconds)
            let found = try await withWriter { [binds] db in
                try db.rows(
                    """
                    WITH v(id, attempt, owner, has_progress, progress, units_done, units_total) AS (VALUES \(values))
                    UPDATE jobs SET lease_until = ?,
                        progress = CASE WHEN v.has_progress THEN v.progress ELSE jobs.progress END,
                        units_done = CASE WHEN v.has_progress THEN v.units_done ELSE jobs.units_done END,
                        units_total = CASE WHEN v.has_progress THEN v.units_total ELSE jobs.units_total END
                    FROM v
                    WHERE jobs.id = v.id AND jobs.attempt = v.attempt AND jobs.owner = v.owner AND jobs.state = 'running'
                    RETURNING jobs.id AS id, jobs.cancel_requested AS cancel_requested
                    """,
                    binds + [leaseUntil],
                    prepared: chunk.count == 1
                ).map { (id: try $0.int64("id"), cancel: $0.bool("cancel_requested")) }
            }
            for row in found {
                renewed[row.id] = row.cancel
            }
        }
        return LeaseCheck(
            lost: heartbeats.map(\.lease).filter { renewed[$0.id.rawValue] == nil },
            cancelRequested: heartbeats.compactMap { renewed[$0.lease.id.rawValue] == true ? $0.lease.id : nil }
        )
    }

    public func checkLeases(_ leases: [JobLease]) async throws -> LeaseCheck {
        guard !leases.isEmpty else { return LeaseCheck() }
        try checkOpen()
        var check = LeaseCheck()
        for chunk in leases.chunked(500) {
            let found = try await withReader { db in
                var found: [Int64: (state: StoredJobState, attempt: Int, owner: String?, cancel: Bool)] = [:]
                let rows = try db.rows(
                    "SELECT id, attempt, owner, state, cancel_requested FROM jobs WHERE id IN (\(placeholders(chunk.count)))",
                    chunk.map { SQLiteData($0.id.rawValue) },
                    prepared: chunk.count == 1
                )
                for row in rows {
                    found[try row.int64("id")] = (
                        try row.state(), try row.int("attempt"), row.optionalString("owner"), row.bool("cancel_requested")
                    )
                }
                return found
            }
            for lease in chunk {
                guard let row = found[lease.id.rawValue], row.state == .running,
                    row.attempt == lease.attempt, row.owner == lease.owner
                else {
                    check.lost.append(lease)
                    continue
                }
                if row.cancel { check.cancelRequested.append(lease.id) }
            }
        }
        return check
    }

    // MARK: - Outcomes

    public func complete(_ completions: [JobCompletion]) async throws -> [JobLease] {
        guard !completions.isEmpty else { return [] }
        var recorded = RecordedOutcomes()
        for chunk in completions.chunked(400) {
            let rows = try await withWriter { db in try Self.recordOutcomes(chunk, db) }
            recorded.add(rows, of: chunk)
        }
        if recorded.endedWithDependents {
            // A crash between the outcome and this leaves the dependents waiting until the next sweep.
            try await transaction { [recorded] db in try recorded.settleDependents(db) }
        }
        changes.signal()
        return completions.map(\.lease).filter { !recorded.accepted.contains($0) }
    }

    /// `true`: ``complete(_:thenClaim:)`` is one transaction.
    public var combinesOutcomesWithClaims: Bool { true }

    /// Records the outcomes, settles their dependents and claims, all in one transaction: one trip to
    /// the writer, one commit.
    public func complete(_ completions: [JobCompletion], thenClaim request: ClaimRequest) async throws -> OutcomesThenClaim {
        let claims = Self.asksForJobs(request)
        let limited = claims ? try await mayHaveLimits() : false
        let (recorded, claimed) = try await transaction { db in
            var recorded = RecordedOutcomes()
            for chunk in completions.chunked(400) {
                recorded.add(try Self.recordOutcomes(chunk, db), of: chunk)
            }
            if recorded.endedWithDependents { try recorded.settleDependents(db) }
            // After the outcomes: the slots and limits they freed, and the dependents they released.
            let claimed = claims ? try Self.claimJobs(request, limited: limited, db) : []
            return (recorded, claimed)
        }
        if !completions.isEmpty { changes.signal() }
        return OutcomesThenClaim(
            refused: completions.map(\.lease).filter { !recorded.accepted.contains($0) },
            claimed: claimed
        )
    }

    /// Writes the outcomes of at most 400 attempts (one statement) on the writer connection; returns
    /// the rows it changed.
    package static func recordOutcomes(_ chunk: ArraySlice<JobCompletion>, _ db: Database) throws -> [RecordedOutcomes.Row] {
        var binds: [SQLiteData] = []
        for completion in chunk {
            let outcome = completion.outcome
            let delay: Int64 =
                switch outcome {
                case .retry(let after, _), .released(let after): after.storedMicroseconds
                default: 0
                }
            let failed: Int =
                switch outcome {
                case .retry, .failed: 1
                default: 0
                }
            binds += [
                SQLiteData(completion.lease.id.rawValue), SQLiteData(completion.lease.attempt),
                SQLiteData(completion.lease.owner), SQLiteData(outcome.resultingState.rawValue),
                SQLiteData(optional: outcome.message), SQLiteData(delay), SQLiteData(failed),
                SQLiteData(completion.progress == nil ? 0 : 1), SQLiteData(optional: completion.progress?.fraction),
                SQLiteData(optional: completion.progress?.completedUnits),
                SQLiteData(optional: completion.progress?.totalUnits),
                completion.result.map { SQLiteData($0) } ?? .null,
            ]
        }
        // The time is bound last, by number, after the values that come first in the text.
        let now = "?\(binds.count + 1)"
        let sql = chunk.count == 1 ? completeOne : """
            WITH v(id, attempt, owner, state, message, delay, failed, has_progress, progress, units_done,
                units_total, result) AS (VALUES \(rowPlaceholders(12, count: chunk.count)))
            UPDATE jobs SET
                state = CASE WHEN v.state = 'available' AND jobs.cancel_requested THEN 'canceled' ELSE v.state END,
                finished_at = CASE
                    WHEN v.state <> 'available' OR jobs.cancel_requested THEN \(now) ELSE NULL END,
                run_at = CASE WHEN v.state = 'available' THEN \(now) + v.delay ELSE jobs.run_at END,
                message = COALESCE(v.message, jobs.message),
                failures = jobs.failures + v.failed,
                owner = NULL, lease_until = NULL,
                progress = CASE WHEN v.has_progress THEN v.progress ELSE jobs.progress END,
                units_done = CASE WHEN v.has_progress THEN v.units_done ELSE jobs.units_done END,
                units_total = CASE WHEN v.has_progress THEN v.units_total ELSE jobs.units_total END,
                result = CASE WHEN v.state = 'succeeded' THEN v.result ELSE jobs.result END
            FROM v
            WHERE jobs.id = v.id AND jobs.attempt = v.attempt AND jobs.owner = v.owner AND jobs.state = 'running'
            RETURNING jobs.id AS id, jobs.attempt AS attempt, jobs.state AS state,
                jobs.has_dependents AS has_dependents
            """
        return try db.rows(sql, binds + [SQLiteData(SQLiteTime.now)], prepared: chunk.count == 1).map {
            RecordedOutcomes.Row(id: try $0.int64("id"), state: try $0.state(), hasDependents: $0.bool("has_dependents"))
        }
    }

    /// The outcome of one job: what the `VALUES` form above does for many, with the row's values bound
    /// by number in the same order (and the time as `?13`). An unbatched worker records one outcome per
    /// statement: this one is compiled once and reused, and it runs in a quarter of the time of the
    /// general form.
    static let completeOne = """
        UPDATE jobs SET
            state = CASE WHEN ?4 = 'available' AND cancel_requested THEN 'canceled' ELSE ?4 END,
            finished_at = CASE WHEN ?4 <> 'available' OR cancel_requested THEN ?13 ELSE NULL END,
            run_at = CASE WHEN ?4 = 'available' THEN ?13 + ?6 ELSE run_at END,
            message = COALESCE(?5, message),
            failures = failures + ?7,
            owner = NULL, lease_until = NULL,
            progress = CASE WHEN ?8 THEN ?9 ELSE progress END,
            units_done = CASE WHEN ?8 THEN ?10 ELSE units_done END,
            units_total = CASE WHEN ?8 THEN ?11 ELSE units_total END,
            result = CASE WHEN ?4 = 'succeeded' THEN ?12 ELSE result END
        WHERE id = ?1 AND attempt = ?2 AND owner = ?3 AND state = 'running'
        RETURNING id, attempt, state, has_dependents
        """

    // MARK: - Recovery and dependencies

    public func recoverExpiredLeases() async throws -> Int {
        try checkOpen()
        let now = SQLiteTime.now
        // Read first: most looks find nothing, and a read takes no lock.
        let due = try await withReader { db in
            try db.rows(
                "SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'running' AND lease_until < ?) AS due",
                [SQLiteData(now)],
                prepared: true
            ).first?.bool("due") == true
        }
        guard due else { return 0 }
        let recovered = try await transaction { db in
            let rows = try db.rows(
                """
                UPDATE jobs SET
                    state = CASE WHEN cancel_requested THEN 'canceled'
                        WHEN failures + 1 >= max_attempts THEN 'failed' ELSE 'available' END,
                    finished_at = CASE WHEN cancel_requested OR failures + 1 >= max_attempts THEN ?1 ELSE NULL END,
                    run_at = CASE WHEN cancel_requested OR failures + 1 >= max_attempts THEN run_at ELSE ?1 END,
                    message = 'the lease of ' || COALESCE(owner, 'a worker') || ' expired during attempt ' || attempt,
                    failures = failures + 1, lease_expiries = lease_expiries + 1, owner = NULL, lease_until = NULL
                WHERE state = 'running' AND lease_until < ?1
                RETURNING id, state, has_dependents
                """,
                [SQLiteData(now)]
            )
            var ended: [Int64] = []
            for row in rows where row.bool("has_dependents") {
                if try row.state().isTerminal { ended.append(try row.int64("id")) }
            }
            try Self.cancelDependents(of: ended, now: now, db)
            return rows.count
        }
        if recovered > 0 { changes.signal() }
        return recovered
    }

    public func resolveDependencies() async throws -> Int {
        let changed = try await transaction { db in
            let released = try db.rows(
                """
                UPDATE jobs SET state = 'available'
                WHERE state = 'waiting' AND NOT EXISTS (
                    SELECT 1 FROM job_dependencies d JOIN jobs p ON p.id = d.depends_on
                    WHERE d.job_id = jobs.id AND p.state <> 'succeeded'
                )
                RETURNING id
                """
            )
            let doomed = try db.rows(
                """
                SELECT DISTINCT d.depends_on AS id FROM jobs w
                JOIN job_dependencies d ON d.job_id = w.id
                JOIN jobs p ON p.id = d.depends_on
                WHERE w.state = 'waiting' AND p.state IN ('failed', 'canceled', 'discarded')
                """
            )
            let canceled = try Self.cancelDependents(
                of: try doomed.map { try $0.int64("id") },
                now: SQLiteTime.now,
                db
            )
            return released.count + canceled
        }
        if changed > 0 { changes.signal() }
        return changed
    }

    /// Makes available the waiting dependents of `succeeded` whose prerequisites all succeeded.
    @discardableResult
    static func releaseDependents(of succeeded: [Int64], _ db: Database) throws -> Int {
        var count = 0
        for chunk in succeeded.chunked(500) {
            let rows = try db.rows(
                """
                UPDATE jobs SET state = 'available'
                WHERE state = 'waiting'
                    AND id IN (SELECT job_id FROM job_dependencies WHERE depends_on IN (\(placeholders(chunk.count))))
                    AND NOT EXISTS (
                        SELECT 1 FROM job_dependencies d JOIN jobs p ON p.id = d.depends_on
                        WHERE d.job_id = jobs.id AND p.state <> 'succeeded'
                    )
                RETURNING id
                """,
                chunk.map { SQLiteData($0) }
            )
            count += rows.count
        }
        return count
    }

    /// Cancels the waiting jobs that depend, directly or through others, on jobs that ended without
    /// success.
    @discardableResult
    static func cancelDependents(of ended: [Int64], now: Int64, _ db: Database) throws -> Int {
        var count = 0
        for chunk in ended.chunked(500) {
            let rows = try db.rows(
                """
                WITH RECURSIVE doomed(id, root) AS (
                    SELECT job_id, depends_on FROM job_dependencies WHERE depends_on IN (\(placeholders(chunk.count)))
                    UNION
                    SELECT d.job_id, doomed.root FROM job_dependencies d JOIN doomed ON d.depends_on = doomed.id
                )
                UPDATE jobs SET state = 'canceled', finished_at = ?,
                    message = 'prerequisite ' || (SELECT min(root) FROM doomed WHERE doomed.id = jobs.id)
                        || ' did not succeed'
                WHERE state = 'waiting' AND id IN (SELECT id FROM doomed)
                RETURNING id
                """,
                chunk.map { SQLiteData($0) } + [SQLiteData(now)]
            )
            count += rows.count
        }
        return count
    }

    // MARK: - Cancel

    public func cancel(_ id: JobID, reason: String) async throws -> CancelResult {
        let result = try await transaction { db -> CancelResult in
            let now = SQLiteTime.now
            let rows = try db.rows(
                """
                UPDATE jobs SET
                    state = CASE WHEN state = 'running' THEN 'running' ELSE 'canceled' END,
                    finished_at = CASE WHEN state = 'running' THEN finished_at ELSE ? END,
                    cancel_requested = 1, message = ?
                WHERE id = ? AND state IN ('waiting', 'available', 'running')
                RETURNING state, has_dependents
                """,
                [SQLiteData(now), SQLiteData(reason), SQLiteData(id.rawValue)]
            )
            if let row = rows.first {
                guard try row.state() == .canceled else { return .requested }
                if row.bool("has_dependents") {
                    try Self.cancelDependents(of: [id.rawValue], now: now, db)
                }
                return .canceled
            }
            let existing = try db.rows("SELECT state FROM jobs WHERE id = ?", [SQLiteData(id.rawValue)])
            guard let row = existing.first else { return .notFound }
            return .alreadyFinished(try row.state())
        }
        changes.signal()
        return result
    }
}

extension Array {
    /// The array in consecutive slices of at most `size` elements.
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
