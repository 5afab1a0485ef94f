import Foundation
import PostgresNIO
import YXJobStore

extension PostgresJobStore {
    public func enqueue(_ requests: [JobRequest]) async throws -> [EnqueueResult] {
        guard !requests.isEmpty else { return [] }
        try JobRequest.validate(requests)
        // Durable on return.
        let results = try await transaction(durable: true) { connection in
            try await self.insert(requests, on: connection)
        }
        if results.contains(where: \.isNew) { changes.signal() }
        return results
    }

    public func enqueue(batches: JobRequestBatches) async throws -> EnqueueCounts {
        try batches.validateLimits()
        // The batches are read inside the transaction: one batch in memory at a time.
        let counts = try await transaction(durable: true) { connection in
            var counts = EnqueueCounts()
            // Only the limits that change are written: a written row stays locked until the commit, and
            // claims skip a locked limit (`SKIP LOCKED`), so an enqueue that merely repeats a host's limit
            // must not hold that host's queued jobs back while it reads its list.
            var existing: [String: Int] = [:]
            if !batches.concurrencyLimits.isEmpty {
                var binds = PostgresBindings()
                binds.append(Array(batches.concurrencyLimits.keys))
                existing = try Self.limits(
                    in: try await self.rows(
                        on: connection, "SELECT key, max_running FROM \(self.schema).job_limits WHERE key = ANY($1)", binds))
            }
            for (key, limit) in batches.concurrencyLimits.sorted(by: { $0.key < $1.key }) where existing[key] != limit {
                try await self.setLimit(limit, forKey: key, on: connection)
            }
            while let batch = try batches.next() {
                guard !batch.isEmpty else { continue }
                try JobRequest.validate(batch)
                let results = try await self.insert(batch, on: connection)
                counts.add(results)
                if batches.checksJoins { try batches.check(try await self.joined(batch, results, on: connection)) }
            }
            return counts
        }
        if !batches.concurrencyLimits.isEmpty {
            forgetLimitsCache()
            await notifyChange()
        }
        if counts.enqueued > 0 { changes.signal() }
        return counts
    }

    /// The requests of a batch that joined live jobs, with those jobs' parameters, for the batches' join
    /// check.
    private func joined(_ batch: [JobRequest], _ results: [EnqueueResult], on connection: PostgresConnection) async throws
        -> [JoinedRequest]
    {
        let pending = JoinedRequest.pending(batch, results)
        guard !pending.isEmpty else { return [] }
        var binds = PostgresBindings()
        binds.append(Array(Set(pending.map(\.existing.rawValue))))
        var payloads: [Int64: Data] = [:]
        for row in try await rows(on: connection, "SELECT id, payload FROM \(schema).jobs WHERE id = ANY($1)", binds) {
            payloads[try row["id"].decode(Int64.self)] = try row.data("payload")
        }
        return try JoinedRequest.joins(pending, payloads: payloads)
    }

    /// Inserts requests in order, inside the caller's transaction: runs of requests without
    /// dependencies in one statement each, the others one by one.
    private func insert(_ requests: [JobRequest], on connection: PostgresConnection) async throws -> [EnqueueResult] {
        if requests.allSatisfy({ $0.options.dependencies.isEmpty }) {
            return try await insertWithoutDependencies(requests, on: connection)
        }
        var results: [EnqueueResult] = []
        var pending: [JobRequest] = []
        for request in requests {
            if request.options.dependencies.isEmpty {
                pending.append(request)
                continue
            }
            results += try await insertWithoutDependencies(pending, on: connection)
            pending.removeAll()
            results.append(try await insertWithDependencies(request, on: connection))
        }
        results += try await insertWithoutDependencies(pending, on: connection)
        return results
    }

    /// Inserts requests without dependencies in one statement over arrays, notifying listeners, and
    /// resolves unique-key conflicts.
    private func insertWithoutDependencies(
        _ requests: [JobRequest],
        on connection: PostgresConnection
    ) async throws -> [EnqueueResult] {
        guard !requests.isEmpty else { return [] }
        var remaining = Array(requests.indices)
        var results = [EnqueueResult?](repeating: nil, count: requests.count)
        // A conflict whose holder ended before we looked is inserted again; twice is plenty.
        for _ in 0..<3 where !remaining.isEmpty {
            let batch = remaining.map { requests[$0] }
            var binds = PostgresBindings()
            binds.append(batch.map(\.name))
            binds.append(batch.map { ByteBuffer(bytes: $0.payload) })
            binds.append(batch.map { $0.options.concurrencyKey ?? $0.name })
            binds.append(batch.map { $0.options.priority })
            // -1: now, on the server's clock.
            binds.append(batch.map { request -> Int64 in
                guard let notBefore = request.options.notBefore else { return -1 }
                return max(0, Int64((notBefore.timeIntervalSince1970 * 1_000_000).rounded()))
            })
            let retries = batch.map { RetryPolicyColumns($0.options.retry) }
            binds.append(retries.map(\.maximumAttempts))
            binds.append(retries.map(\.initialDelayMilliseconds))
            binds.append(retries.map(\.maximumDelayMilliseconds))
            binds.append(retries.map(\.jitter))
            binds.append(batch.map { $0.options.timeout?.milliseconds ?? -1 })
            binds.append(batch.map { $0.options.uniqueKey ?? "" })
            binds.append(channel)
            binds.append(retries.map(\.maximumRetryAfterMilliseconds))
            binds.append(retries.map(\.scope))
            let inserted = try await rows(
                on: connection,
                """
                WITH input AS (
                    SELECT * FROM unnest($1::text[], $2::bytea[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[],
                        $7::bigint[], $8::bigint[], $9::float8[], $10::bigint[], $11::text[], $13::bigint[], $14::text[])
                        WITH ORDINALITY AS t(name, payload, concurrency_key, priority, run_at_us, max_attempts,
                            retry_initial_ms, retry_max_ms, retry_jitter, timeout_ms, unique_key, retry_max_after_ms,
                            retry_scope, ord)
                ),
                inserted AS (
                    INSERT INTO \(schema).jobs (name, payload, state, concurrency_key, priority, run_at,
                        max_attempts, retry_initial_ms, retry_max_ms, retry_jitter, retry_max_after_ms, retry_scope,
                        timeout_ms, unique_key)
                    SELECT name, payload, 'available', concurrency_key, priority,
                        CASE WHEN run_at_us < 0 THEN now() ELSE to_timestamp(run_at_us / 1000000.0) END,
                        max_attempts, retry_initial_ms, retry_max_ms, retry_jitter, retry_max_after_ms, retry_scope,
                        NULLIF(timeout_ms, -1), NULLIF(unique_key, '')
                    FROM input ORDER BY ord
                    ON CONFLICT DO NOTHING
                    RETURNING id, unique_key
                ),
                notified AS (
                    SELECT pg_notify($12, '') WHERE EXISTS (SELECT 1 FROM inserted)
                )
                SELECT id, unique_key FROM inserted, (SELECT count(*) FROM notified) AS n ORDER BY id
                """,
                binds
            )
            let returned = try inserted.map { (id: try $0["id"].decode(Int64.self), key: try $0["unique_key"].decode(String?.self)) }
            let mapped = try InsertAlignment.align(inputs: batch.map(\.options.uniqueKey), returned: returned)
            var conflicts: [Int] = []
            for (position, id) in mapped.enumerated() {
                if let id {
                    results[remaining[position]] = .enqueued(JobID(id))
                } else {
                    conflicts.append(remaining[position])
                }
            }
            guard !conflicts.isEmpty else { remaining = []; break }
            // Each conflict: the live job that holds the key.
            var keyBinds = PostgresBindings()
            keyBinds.append(Array(Set(conflicts.compactMap { requests[$0].options.uniqueKey })))
            let holders = try await rows(
                on: connection,
                """
                SELECT id, unique_key FROM \(schema).jobs
                WHERE unique_key = ANY($1) AND state IN ('waiting', 'available', 'running')
                """,
                keyBinds
            )
            var holderOf: [String: Int64] = [:]
            for row in holders {
                holderOf[try row["unique_key"].decode(String.self)] = try row["id"].decode(Int64.self)
            }
            remaining = []
            for index in conflicts {
                let options = requests[index].options
                guard let key = options.uniqueKey, let holder = holderOf[key] else {
                    remaining.append(index)
                    continue
                }
                let id = JobID(holder)
                results[index] = options.onDuplicate == .join ? .joined(existing: id) : .refused(existing: id)
            }
        }
        guard remaining.isEmpty else {
            throw JobStoreError.invalidResponse("unique keys kept conflicting with jobs that no longer hold them")
        }
        return try results.map { result in
            guard let result else { throw JobStoreError.invalidResponse("an enqueue result is missing") }
            return result
        }
    }

    /// Inserts one request with dependencies: locks the prerequisites (so that none ends while the new
    /// job is recorded against it), decides the starting state, inserts the job and its edges.
    private func insertWithDependencies(_ request: JobRequest, on connection: PostgresConnection) async throws
        -> EnqueueResult
    {
        let options = request.options
        let dependencies = Array(Set(options.dependencies)).sorted()
        var dependencyBinds = PostgresBindings()
        dependencyBinds.append(dependencies.map(\.rawValue))
        let prerequisites = try await rows(
            on: connection,
            "SELECT id, state FROM \(schema).jobs WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE",
            dependencyBinds
        )
        var states: [Int64: StoredJobState] = [:]
        for row in prerequisites {
            states[try row["id"].decode(Int64.self)] = try row.state()
        }
        let decision = try DependencyDecision(dependencies: dependencies, states: states)
        var binds = PostgresBindings()
        binds.append(request.name)
        binds.append(ByteBuffer(bytes: request.payload))
        binds.append(decision.state.rawValue)
        binds.append(options.concurrencyKey ?? request.name)
        binds.append(options.priority)
        binds.append(options.notBefore.map { max(0, Int64(($0.timeIntervalSince1970 * 1_000_000).rounded())) } ?? -1)
        let retry = RetryPolicyColumns(options.retry)
        binds.append(retry.maximumAttempts)
        binds.append(retry.initialDelayMilliseconds)
        binds.append(retry.maximumDelayMilliseconds)
        binds.append(retry.jitter)
        binds.append(options.timeout?.milliseconds ?? -1)
        binds.append(options.uniqueKey ?? "")
        binds.append(decision.message ?? "")
        binds.append(retry.maximumRetryAfterMilliseconds)
        binds.append(retry.scope)
        let inserted = try await rows(
            on: connection,
            """
            INSERT INTO \(schema).jobs (name, payload, state, concurrency_key, priority, run_at, max_attempts,
                retry_initial_ms, retry_max_ms, retry_jitter, timeout_ms, unique_key, message, finished_at,
                retry_max_after_ms, retry_scope)
            VALUES ($1, $2, $3, $4, $5,
                CASE WHEN $6::bigint < 0 THEN now() ELSE to_timestamp($6::bigint / 1000000.0) END,
                $7, $8, $9, $10, NULLIF($11::bigint, -1), NULLIF($12, ''), NULLIF($13, ''),
                CASE WHEN $3 IN ('canceled') THEN now() END, $14, $15)
            ON CONFLICT DO NOTHING
            RETURNING id
            """,
            binds
        )
        if let row = inserted.first {
            let id = try row["id"].decode(Int64.self)
            var edgeBinds = PostgresBindings()
            edgeBinds.append(id)
            edgeBinds.append(dependencies.map(\.rawValue))
            _ = try await rows(
                on: connection,
                """
                INSERT INTO \(schema).job_dependencies (job_id, depends_on) SELECT $1, unnest($2::bigint[])
                """,
                edgeBinds
            )
            var flagBinds = PostgresBindings()
            flagBinds.append(dependencies.map(\.rawValue))
            _ = try await rows(
                on: connection,
                "UPDATE \(schema).jobs SET has_dependents = true WHERE id = ANY($1) AND NOT has_dependents",
                flagBinds
            )
            if decision.state == .available { await notifyChange(on: connection) }
            return .enqueued(JobID(id))
        }
        guard let key = options.uniqueKey else {
            throw JobStoreError.invalidResponse("an insert without unique key was refused")
        }
        var keyBinds = PostgresBindings()
        keyBinds.append(key)
        let holder = try await rows(
            on: connection,
            "SELECT id FROM \(schema).jobs WHERE unique_key = $1 AND state IN ('waiting', 'available', 'running')",
            keyBinds
        )
        guard let row = holder.first else {
            throw JobStoreError.invalidResponse("unique key \(key) was refused but no live job holds it")
        }
        let id = JobID(try row["id"].decode(Int64.self))
        return options.onDuplicate == .join ? .joined(existing: id) : .refused(existing: id)
    }
}
