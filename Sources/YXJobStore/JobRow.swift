import Foundation
import YXQueue

/// A row of a store's `jobs` table as its database driver returns it, read by column name: what the
/// SQLite and PostgreSQL stores share, so that both map a row to a ``JobRecord`` or a ``ClaimedJob``
/// with the same code. Each accessor throws when the column is missing or of another type.
package protocol JobRow {
    func int(_ column: String) throws -> Int
    func int64(_ column: String) throws -> Int64
    func optionalInt64(_ column: String) throws -> Int64?
    func double(_ column: String) throws -> Double
    func optionalDouble(_ column: String) throws -> Double?
    func string(_ column: String) throws -> String
    func optionalString(_ column: String) throws -> String?
    func bool(_ column: String) throws -> Bool
    func data(_ column: String) throws -> Data
    func optionalData(_ column: String) throws -> Data?
    func date(_ column: String) throws -> Date
    func optionalDate(_ column: String) throws -> Date?
}

extension JobRow {
    /// The `state` column (or another of the same kind).
    package func state(_ column: String = "state") throws -> StoredJobState {
        let raw = try string(column)
        guard let state = StoredJobState(rawValue: raw) else {
            throw JobStoreError.invalidResponse("unknown job state \(raw)")
        }
        return state
    }

    /// The `retry_…` and `max_attempts` columns.
    package func retryPolicy() throws -> RetryPolicy {
        RetryPolicyColumns(
            maximumAttempts: try int("max_attempts"),
            initialDelayMilliseconds: try int64("retry_initial_ms"),
            maximumDelayMilliseconds: try int64("retry_max_ms"),
            jitter: try double("retry_jitter"),
            maximumRetryAfterMilliseconds: try int64("retry_max_after_ms"),
            scope: try string("retry_scope")
        ).policy
    }

    /// The `progress`, `units_done` and `units_total` columns.
    package func progress() throws -> JobProgress {
        JobProgress(
            fraction: try optionalDouble("progress"),
            completedUnits: try optionalInt64("units_done"),
            totalUnits: try optionalInt64("units_total")
        )
    }
}

extension JobRecord {
    /// The record of a row with every column of `jobs`, and the jobs it depends on.
    package init(row: some JobRow, dependencies: [JobID]) throws {
        self.init(
            id: JobID(try row.int64("id")),
            name: try row.string("name"),
            state: try row.state(),
            payload: try row.data("payload"),
            attempt: try row.int("attempt"),
            failures: try row.int("failures"),
            leaseExpiries: try row.int("lease_expiries"),
            retry: try row.retryPolicy(),
            timeout: try row.optionalInt64("timeout_ms").map { .milliseconds($0) },
            priority: try row.int("priority"),
            concurrencyKey: try row.string("concurrency_key"),
            uniqueKey: try row.optionalString("unique_key"),
            dependencies: dependencies,
            enqueuedAt: try row.date("created_at"),
            readyAt: try row.date("run_at"),
            startedAt: try row.optionalDate("started_at"),
            finishedAt: try row.optionalDate("finished_at"),
            owner: try row.optionalString("owner"),
            leaseUntil: try row.optionalDate("lease_until"),
            cancelRequested: try row.bool("cancel_requested"),
            progress: try row.progress(),
            message: try row.optionalString("message"),
            result: try row.optionalData("result")
        )
    }
}

extension ClaimedJob {
    /// The job a claim returned, leased to `owner`: the columns of a claim's `RETURNING`.
    package init(row: some JobRow, owner: String) throws {
        self.init(
            lease: JobLease(id: JobID(try row.int64("id")), attempt: try row.int("attempt"), owner: owner),
            name: try row.string("name"),
            payload: try row.data("payload"),
            failures: try row.int("failures"),
            retry: try row.retryPolicy(),
            timeout: try row.optionalInt64("timeout_ms").map { .milliseconds($0) },
            priority: try row.int("priority"),
            concurrencyKey: try row.string("concurrency_key"),
            enqueuedAt: try row.date("created_at"),
            readyAt: try row.date("run_at")
        )
    }
}

extension JobStoreStatus.RunningJob {
    /// A running job of a status, from its row.
    package init(row: some JobRow) throws {
        self.init(
            id: JobID(try row.int64("id")),
            name: try row.string("name"),
            attempt: try row.int("attempt"),
            progress: try row.progress(),
            startedAt: try row.optionalDate("started_at"),
            leaseUntil: try row.optionalDate("lease_until"),
            cancelRequested: try row.bool("cancel_requested")
        )
    }
}
