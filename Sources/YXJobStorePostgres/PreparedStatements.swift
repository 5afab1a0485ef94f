import PostgresNIO

// The statements a worker runs for every job, kept compiled on each connection: postgres-nio prepares a
// `PostgresPreparedStatement` the first time a connection runs it and then only binds and executes it.
// Sent as unnamed statements, the server parsed and planned them anew each time: measured with
// `log_min_duration_statement = 0` on this machine, 88 µs to parse and 140 µs to bind (plan) a claim
// that then ran in 75 µs, and 101 + 107 µs before an outcome that ran in 63 µs.
//
// A prepared statement's text is a static string, the same for every store in the process, so it names
// the tables without their schema: each store's connections start with `search_path` set to the store's
// schema (see `PostgresJobStore.open`), and PostgreSQL resolves the names when a connection prepares the
// statement. Every other statement names its schema itself.
//
// The types of the parameters are given, not left to the server: it would infer `$2 * interval …` as a
// double while the binding is a binary `bigint`.

/// A statement kept compiled, with its bindings; rows come back whole, read by column name.
protocol StoredStatement: PostgresPreparedStatement where Row == PostgresRandomAccessRow {
    var bindings: PostgresBindings { get }
}

extension StoredStatement {
    func makeBindings() throws -> PostgresBindings { bindings }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRandomAccessRow { row.makeRandomAccess() }
}

/// Jobs of keys without a limit whose name is in `$3`: one statement, no waiting on other claimers.
///
/// Each name is walked in its own index order (a `LATERAL` subquery per name, `name = …` rather than
/// `name = ANY(…)`), so that a claim reads about `limit` rows per name whatever the length of the queue,
/// instead of sorting every ready job. `OFFSET 0` keeps the limits check a per-row subplan: as an
/// anti-join, an empty limits table (estimated at a thousand rows before it was ever analyzed) made the
/// planner expect one matching job and sort the whole queue.
///
/// Parameters: owner, lease in microseconds, names, limit.
struct ClaimNamed: StoredStatement {
    static let sql = claimSQL(
        candidates: """
            SELECT c.id FROM unnest($3::text[]) AS wanted(name)
            CROSS JOIN LATERAL (
                SELECT x.id, x.priority, x.run_at FROM jobs x
                WHERE x.state = 'available' AND x.name = wanted.name AND x.run_at <= now()
                    AND NOT EXISTS (SELECT 1 FROM job_limits l WHERE l.key = x.concurrency_key OFFSET 0)
                ORDER BY x.priority DESC, x.run_at, x.id
                LIMIT $4
                FOR UPDATE OF x SKIP LOCKED
            ) c
            ORDER BY c.priority DESC, c.run_at, c.id
            LIMIT $4
            """
    )
    static let bindingDataTypes: [PostgresDataType] = [.text, .int8, .textArray, .int8]
    let bindings: PostgresBindings
}

/// Jobs of keys without a limit whose name is not in `$3`. Parameters as ``ClaimNamed``.
struct ClaimAllExcept: StoredStatement {
    static let sql = claimSQL(
        candidates: """
            SELECT c.id FROM jobs c
            WHERE c.state = 'available' AND c.run_at <= now() AND NOT (c.name = ANY($3::text[]))
                AND NOT EXISTS (SELECT 1 FROM job_limits l WHERE l.key = c.concurrency_key OFFSET 0)
            ORDER BY c.priority DESC, c.run_at, c.id
            LIMIT $4
            FOR UPDATE SKIP LOCKED
            """
    )
    static let bindingDataTypes: [PostgresDataType] = [.text, .int8, .textArray, .int8]
    let bindings: PostgresBindings
}

/// One job of one name (the claim of a worker with one free slot): what ``ClaimNamed`` does, with the
/// name and the limit in the text's shape rather than in arrays. Its plan is the same for every name,
/// so after a few runs PostgreSQL keeps a generic plan and stops planning it (a claim by an array of
/// names and a `LIMIT $4` is planned anew every time: its generic plan's estimate is worse).
///
/// Parameters: owner, lease in microseconds, name.
struct ClaimOneNamed: StoredStatement {
    static let sql = claimSQL(
        candidates: """
            SELECT x.id FROM jobs x
            WHERE x.state = 'available' AND x.name = $3 AND x.run_at <= now()
                AND NOT EXISTS (SELECT 1 FROM job_limits l WHERE l.key = x.concurrency_key OFFSET 0)
            ORDER BY x.priority DESC, x.run_at, x.id
            LIMIT 1
            FOR UPDATE OF x SKIP LOCKED
            """
    )
    static let bindingDataTypes: [PostgresDataType] = [.text, .int8, .text]
    let bindings: PostgresBindings
}

/// The claim around a query of candidate ids.
private func claimSQL(candidates: String) -> String {
    """
    UPDATE jobs j SET state = 'running', attempt = j.attempt + 1, owner = $1,
        lease_until = now() + $2 * interval '1 microsecond', started_at = now(),
        progress = NULL, units_done = NULL, units_total = NULL
    FROM (\(candidates)) picked
    WHERE j.id = picked.id
    RETURNING \(PostgresJobStore.claimedColumns)
    """
}

/// Outcomes of several jobs whose lease is still the one given: one array per column (one outcome goes
/// through ``RecordOutcome``). A job to retry goes back to `available` (or `canceled`, when a cancel was
/// asked for meanwhile).
struct RecordOutcomes: StoredStatement {
    static let sql = """
        UPDATE jobs j SET
            state = CASE WHEN v.state = 'available' AND j.cancel_requested THEN 'canceled' ELSE v.state END,
            finished_at = CASE WHEN v.state <> 'available' OR j.cancel_requested THEN now() END,
            run_at = CASE WHEN v.state = 'available' THEN now() + v.delay_us * interval '1 microsecond'
                ELSE j.run_at END,
            message = COALESCE(NULLIF(v.message, ''), j.message),
            failures = j.failures + v.failed,
            owner = NULL, lease_until = NULL,
            progress = CASE WHEN v.has_progress THEN NULLIF(v.progress, -1) ELSE j.progress END,
            units_done = CASE WHEN v.has_progress THEN NULLIF(v.units_done, -1) ELSE j.units_done END,
            units_total = CASE WHEN v.has_progress THEN NULLIF(v.units_total, -1) ELSE j.units_total END,
            result = CASE WHEN v.state = 'succeeded' AND v.has_result THEN v.result
                WHEN v.state = 'succeeded' THEN NULL ELSE j.result END
        FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[],
                $8::bool[], $9::float8[], $10::bigint[], $11::bigint[], $12::bool[], $13::bytea[])
            AS v(id, attempt, owner, state, message, delay_us, failed, has_progress, progress, units_done,
                units_total, has_result, result)
        WHERE j.id = v.id AND j.attempt = v.attempt AND j.owner = v.owner AND j.state = 'running'
        RETURNING j.id, j.state, j.has_dependents, j.concurrency_key
        """
    static let bindingDataTypes: [PostgresDataType] = [
        .int8Array, .int8Array, .textArray, .textArray, .textArray, .int8Array, .int8Array,
        .boolArray, .float8Array, .int8Array, .int8Array, .boolArray, .byteaArray,
    ]
    let bindings: PostgresBindings
}

/// The outcome of one job: ``RecordOutcomes`` with each column a single value, found by its primary key,
/// so that PostgreSQL keeps a generic plan for it (the join with `unnest` is planned anew every time,
/// and its generic plan walks the running jobs instead of the key). Parameters in the same order.
struct RecordOutcome: StoredStatement {
    static let sql = """
        UPDATE jobs j SET
            state = CASE WHEN $4 = 'available' AND j.cancel_requested THEN 'canceled' ELSE $4 END,
            finished_at = CASE WHEN $4 <> 'available' OR j.cancel_requested THEN now() END,
            run_at = CASE WHEN $4 = 'available' THEN now() + $6 * interval '1 microsecond' ELSE j.run_at END,
            message = COALESCE(NULLIF($5, ''), j.message),
            failures = j.failures + $7,
            owner = NULL, lease_until = NULL,
            progress = CASE WHEN $8 THEN NULLIF($9, -1) ELSE j.progress END,
            units_done = CASE WHEN $8 THEN NULLIF($10, -1) ELSE j.units_done END,
            units_total = CASE WHEN $8 THEN NULLIF($11, -1) ELSE j.units_total END,
            result = CASE WHEN $4 = 'succeeded' AND $12 THEN $13 WHEN $4 = 'succeeded' THEN NULL ELSE j.result END
        WHERE j.id = $1 AND j.attempt = $2 AND j.owner = $3 AND j.state = 'running'
        RETURNING j.id, j.state, j.has_dependents, j.concurrency_key
        """
    static let bindingDataTypes: [PostgresDataType] = [
        .int8, .int8, .text, .text, .text, .int8, .int8, .bool, .float8, .int8, .int8, .bool, .bytea,
    ]
    let bindings: PostgresBindings
}
