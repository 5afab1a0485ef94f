import Foundation
import GRDB
import YXJobStore

extension SQLiteJobStore {
    public func enqueue(_ requests: [JobRequest]) async throws -> [EnqueueResult] {
        guard !requests.isEmpty else { return [] }
        try JobRequest.validate(requests)
        let results = try await transaction(durable: configuration.durableEnqueue) { db in
            let now = SQLiteTime.now
            var results: [EnqueueResult] = []
            results.reserveCapacity(requests.count)
            for request in requests {
                results.append(try Self.insert(request, now: now, db))
            }
            return results
        }
        if results.contains(where: \.isNew) { changes.signal() }
        return results
    }

    public func enqueue(batches: JobRequestBatches) async throws -> EnqueueCounts {
        try batches.validateLimits()
        // The batches are read inside the transaction, on the writer: one batch in memory at a time.
        let counts = try await transaction(durable: configuration.durableEnqueue) { db in
            let now = SQLiteTime.now
            var counts = EnqueueCounts()
            for (key, limit) in batches.concurrencyLimits.sorted(by: { $0.key < $1.key }) {
                try Self.setLimit(limit, forKey: key, db)
            }
            while let batch = try batches.next() {
                try JobRequest.validate(batch)
                let results = try batch.map { try Self.insert($0, now: now, db) }
                counts.add(results)
                if batches.checksJoins { try batches.check(try Self.joined(JoinedRequest.pending(batch, results), db)) }
            }
            return counts
        }
        if !batches.concurrencyLimits.isEmpty { forgetLimitsCache() }
        if counts.enqueued > 0 || !batches.concurrencyLimits.isEmpty { changes.signal() }
        return counts
    }

    /// The joins of a batch with the parameters of the jobs they joined, for the batches' join check.
    private static func joined(_ pending: [JoinedRequest.Pending], _ db: Database) throws -> [JoinedRequest] {
        var payloads: [Int64: Data] = [:]
        for chunk in Array(Set(pending.map(\.existing.rawValue))).chunked(500) {  // SQLite's limit of variables
            for row in try db.rows("SELECT id, payload FROM jobs WHERE id IN (\(placeholders(chunk.count)))", chunk.map { SQLiteData($0) }) {
                payloads[try row.int64("id")] = row.data("payload")
            }
        }
        return try JoinedRequest.joins(pending, payloads: payloads)
    }

    private static func insert(_ request: JobRequest, now: Int64, _ db: Database) throws
        -> EnqueueResult
    {
        let options = request.options
        let dependencies = Array(Set(options.dependencies)).sorted()
        var state = StoredJobState.available
        var message: String?
        var finishedAt: Int64?
        if !dependencies.isEmpty {
            let rows = try db.rows(
                "SELECT id, state FROM jobs WHERE id IN (\(placeholders(dependencies.count)))",
                dependencies.map { SQLiteData($0.rawValue) }
            )
            var states: [Int64: StoredJobState] = [:]
            for row in rows {
                states[try row.int64("id")] = try row.state()
            }
            let decision = try DependencyDecision(dependencies: dependencies, states: states)
            state = decision.state
            message = decision.message
            if state.isTerminal { finishedAt = now }
        }
        let runAt = options.notBefore.map(SQLiteTime.micros) ?? now
        let retry = RetryPolicyColumns(options.retry)
        let binds: [SQLiteData] = [
            SQLiteData(request.name),
            SQLiteData(request.payload),
            SQLiteData(state.rawValue),
            SQLiteData(options.concurrencyKey ?? request.name),
            SQLiteData(options.priority),
            SQLiteData(max(runAt, 0)),
            SQLiteData(now),
            SQLiteData(optional: finishedAt),
            SQLiteData(retry.maximumAttempts),
            SQLiteData(retry.initialDelayMilliseconds),
            SQLiteData(retry.maximumDelayMilliseconds),
            SQLiteData(retry.jitter),
            SQLiteData(retry.maximumRetryAfterMilliseconds),
            SQLiteData(retry.scope),
            SQLiteData(optional: options.timeout.map(\.milliseconds)),
            SQLiteData(optional: options.uniqueKey),
            SQLiteData(optional: message),
        ]
        let inserted = try db.rows(
            """
            INSERT INTO jobs (name, payload, state, concurrency_key, priority, run_at, created_at, finished_at,
                max_attempts, retry_initial_ms, retry_max_ms, retry_jitter, retry_max_after_ms, retry_scope, timeout_ms,
                unique_key, message)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT DO NOTHING
            RETURNING id
            """,
            binds,
            prepared: true
        )
        if let row = inserted.first {
            let id = try row.int64("id")
            if !dependencies.isEmpty {
                let values = rowPlaceholders(2, count: dependencies.count)
                _ = try db.rows(
                    "INSERT INTO job_dependencies (job_id, depends_on) VALUES \(values)",
                    dependencies.flatMap { [SQLiteData(id), SQLiteData($0.rawValue)] }
                )
                _ = try db.rows(
                    "UPDATE jobs SET has_dependents = 1 WHERE has_dependents = 0 AND id IN (\(placeholders(dependencies.count)))",
                    dependencies.map { SQLiteData($0.rawValue) }
                )
            }
            return .enqueued(JobID(id))
        }
        // Nothing inserted: the unique key is held by a live job (the only constraint that can refuse).
        guard let key = options.uniqueKey else {
            throw JobStoreError.invalidResponse("an insert without unique key was refused")
        }
        let existing = try db.rows(
            "SELECT id FROM jobs WHERE unique_key = ? AND state IN ('waiting', 'available', 'running')",
            [SQLiteData(key)]
        )
        guard let holder = existing.first else {
            throw JobStoreError.invalidResponse("unique key \(key) was refused but no live job holds it")
        }
        let id = JobID(try holder.int64("id"))
        return options.onDuplicate == .join ? .joined(existing: id) : .refused(existing: id)
    }
}
