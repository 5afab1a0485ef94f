import Foundation

/// How transient failures are retried: exponential back-off with jitter, honouring `Retry-After`.
///
/// ```swift
/// var policy = RetryPolicy()          // 5 retries, first wait 1 s, then 2 s, 4 s, … (±25 %)
/// policy.retries = 2
/// ```
public struct RetryPolicy: Sendable, Equatable {
    /// Retries after the first attempt (so `retries + 1` attempts in all).
    public var retries: Int
    /// The first wait; each retry doubles it.
    public var initialDelay: TimeInterval
    /// The longest back-off (a `Retry-After` from the server may be longer).
    public var maxDelay: TimeInterval
    /// Random spread of each wait, as a fraction (0.25 = ±25 %).
    public var jitter: Double

    /// Creates a policy; negative values count as 0 and `jitter` is kept between 0 and 1.
    public init(retries: Int = 5, initialDelay: TimeInterval = 1, maxDelay: TimeInterval = 60, jitter: Double = 0.25) {
        self.retries = max(0, retries)
        self.initialDelay = max(0, initialDelay)
        self.maxDelay = max(0, maxDelay)
        self.jitter = min(1, max(0, jitter))
    }

    /// The wait before retry number `retry` (1 for the first retry).
    ///
    /// - Parameters:
    ///   - retry: The number of the retry, from 1.
    ///   - retryAfter: What the server asked for, if anything: the wait is never shorter.
    public func delay(beforeRetry retry: Int, retryAfter: TimeInterval? = nil) -> TimeInterval {
        let exponent = Double(max(0, retry - 1))
        let base = min(maxDelay, initialDelay * pow(2, exponent))
        let spread = base * jitter
        let backoff = max(0, base + Double.random(in: -spread...spread))
        return max(backoff, retryAfter ?? 0)
    }
}
