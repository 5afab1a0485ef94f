import YXQueue

/// A ``RetryPolicy`` as the stores keep it: one column per field, in whole milliseconds.
///
/// | column | field |
/// |---|---|
/// | `max_attempts` | ``RetryPolicy/retries`` + 1 (the store counts attempts, the policy retries) |
/// | `retry_initial_ms` | ``RetryPolicy/initialDelay`` |
/// | `retry_max_ms` | ``RetryPolicy/maxDelay`` |
/// | `retry_jitter` | ``RetryPolicy/jitter`` |
/// | `retry_max_after_ms` | ``RetryPolicy/maxRetryAfter`` (schema version 2) |
/// | `retry_scope` | ``RetryPolicy/scope``: `all_errors` or `transient_errors` (schema version 2) |
///
/// Rows written before version 2 read as `all_errors` with an hour's `maxRetryAfter`: what the store did
/// then.
package struct RetryPolicyColumns: Sendable, Hashable {
    package var maximumAttempts: Int
    package var initialDelayMilliseconds: Int64
    package var maximumDelayMilliseconds: Int64
    package var jitter: Double
    package var maximumRetryAfterMilliseconds: Int64
    package var scope: String

    /// The columns of `policy`.
    package init(_ policy: RetryPolicy) {
        // PostgreSQL keeps attempts in a 32-bit column; two billion retries are as good as endless.
        maximumAttempts = min(policy.retries, Int(Int32.max) - 1) + 1
        initialDelayMilliseconds = Self.milliseconds(policy.initialDelay)
        maximumDelayMilliseconds = Self.milliseconds(policy.maxDelay)
        jitter = policy.jitter
        maximumRetryAfterMilliseconds = Self.milliseconds(policy.maxRetryAfter)
        scope = Self.name(of: policy.scope)
    }

    /// Columns as read from a row.
    package init(
        maximumAttempts: Int, initialDelayMilliseconds: Int64, maximumDelayMilliseconds: Int64, jitter: Double,
        maximumRetryAfterMilliseconds: Int64, scope: String
    ) {
        self.maximumAttempts = maximumAttempts
        self.initialDelayMilliseconds = initialDelayMilliseconds
        self.maximumDelayMilliseconds = maximumDelayMilliseconds
        self.jitter = jitter
        self.maximumRetryAfterMilliseconds = maximumRetryAfterMilliseconds
        self.scope = scope
    }

    /// The policy the columns describe (an unknown scope reads as every error, as before version 2).
    package var policy: RetryPolicy {
        RetryPolicy(
            retries: max(0, maximumAttempts - 1),
            initialDelay: Double(initialDelayMilliseconds) / 1000,
            maxDelay: Double(maximumDelayMilliseconds) / 1000,
            jitter: jitter,
            maxRetryAfter: Double(maximumRetryAfterMilliseconds) / 1000,
            scope: scope == Self.name(of: .transientErrors) ? .transientErrors : .allErrors
        )
    }

    /// The `retry_scope` text of a scope.
    package static func name(of scope: RetryPolicy.Scope) -> String {
        switch scope {
        case .allErrors: "all_errors"
        case .transientErrors: "transient_errors"
        }
    }

    /// Whole milliseconds of a non-negative interval, saturated (a policy's fields are clamped at 0).
    private static func milliseconds(_ seconds: Double) -> Int64 {
        let value = (seconds * 1000).rounded()
        guard value.isFinite, value < Double(Int64.max) else { return Int64.max }
        return max(0, Int64(value))
    }
}
