import Foundation
import PostgresNIO
import YXJobStore
import YXQueue

extension PostgresRandomAccessRow {
    func state(_ column: String = "state") throws -> StoredJobState {
        let raw = try self[column].decode(String.self)
        guard let state = StoredJobState(rawValue: raw) else {
            throw JobStoreError.invalidResponse("unknown job state \(raw)")
        }
        return state
    }

    func retryPolicy() throws -> RetryPolicy {
        RetryPolicyColumns(
            maximumAttempts: try self["max_attempts"].decode(Int.self),
            initialDelayMilliseconds: try self["retry_initial_ms"].decode(Int64.self),
            maximumDelayMilliseconds: try self["retry_max_ms"].decode(Int64.self),
            jitter: try self["retry_jitter"].decode(Double.self),
            maximumRetryAfterMilliseconds: try self["retry_max_after_ms"].decode(Int64.self),
            scope: try self["retry_scope"].decode(String.self)
        ).policy
    }

    func progress() throws -> JobProgress {
        JobProgress(
            fraction: try self["progress"].decode(Double?.self),
            completedUnits: try self["units_done"].decode(Int64?.self),
            totalUnits: try self["units_total"].decode(Int64?.self)
        )
    }
}
