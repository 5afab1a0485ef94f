import Foundation

/// How a job (or a download) tries again after a failure that may go away: exponential back-off with
/// jitter, honouring a wait the failure asks for (a server's `Retry-After`).
///
/// Which errors are retried: those that conform to ``TransientError`` and say ``TransientError/isTransient``
/// (the default), or every error (``Scope/allErrors``). Cancellation is never retried.
///
/// ```swift
/// var policy = RetryPolicy()          // 5 retries, first wait 1 s, then 2 s, 4 s, … (±25 %), up to 60 s
/// policy.retries = 2
/// let never = RetryPolicy.never       // what a job has unless it asks for retries
/// ```
public struct RetryPolicy: Sendable, Hashable {
    /// Which failures are retried.
    public enum Scope: String, Sendable, Hashable, Codable {
        /// Errors that conform to ``TransientError`` and say they are transient.
        case transientErrors
        /// Every error but cancellation.
        case allErrors
    }

    /// Retries after the first try (so `retries + 1` tries in all).
    public var retries: Int
    /// The first wait; each retry doubles it.
    public var initialDelay: TimeInterval
    /// The longest back-off (a wait asked for by the failure may be longer, up to ``maxRetryAfter``).
    public var maxDelay: TimeInterval
    /// Random spread of each wait, as a fraction (0.25 = ±25 %).
    public var jitter: Double
    /// The longest wait a failure may ask for (``TransientError/retryAfter``; default one hour): a longer
    /// one is not waited for, and the failure stands.
    public var maxRetryAfter: TimeInterval
    /// Which failures are retried.
    public var scope: Scope

    /// No retry: the first failure is the outcome.
    public static let never = RetryPolicy(retries: 0)

    /// Creates a policy; negative values count as 0 and `jitter` is kept between 0 and 1.
    public init(
        retries: Int = 5, initialDelay: TimeInterval = 1, maxDelay: TimeInterval = 60, jitter: Double = 0.25,
        maxRetryAfter: TimeInterval = 3600, scope: Scope = .transientErrors
    ) {
        self.retries = max(0, retries)
        self.initialDelay = max(0, initialDelay.isFinite ? initialDelay : 0)
        self.maxDelay = max(0, maxDelay.isFinite ? maxDelay : 0)
        self.jitter = min(1, max(0, jitter.isFinite ? jitter : 0))
        self.maxRetryAfter = max(0, maxRetryAfter.isFinite ? maxRetryAfter : 0)
        self.scope = scope
    }

    /// The wait before retry number `retry` (1 for the first retry).
    ///
    /// - Parameters:
    ///   - retry: The number of the retry, from 1.
    ///   - retryAfter: What the failure asked for, if anything: the wait is never shorter.
    public func delay(beforeRetry retry: Int, retryAfter: TimeInterval? = nil) -> TimeInterval {
        let exponent = Double(min(62, max(0, retry - 1)))
        let base = min(maxDelay, initialDelay * pow(2, exponent))
        let spread = base * jitter
        let backoff = max(0, base + Double.random(in: -spread...spread))
        return max(backoff, retryAfter ?? 0)
    }

    /// Whether `error` may be retried under this policy (not counting how many retries are left).
    public func allowsRetry(of error: any Error) -> Bool {
        if error is CancellationError { return false }
        switch scope {
        case .allErrors: return true
        case .transientErrors: return (error as? any TransientError)?.isTransient ?? false
        }
    }

    /// The wait before the next try after `error`, when `retriesUsed` retries were already made; `nil`
    /// when the failure stands (not retryable, no retry left, or a wait longer than ``maxRetryAfter``
    /// asked for).
    public func delay(after error: any Error, retriesUsed: Int) -> TimeInterval? {
        guard retriesUsed < retries else { return nil }
        return delay(answering: ask(of: error), retriesUsed: retriesUsed)
    }

    /// What a failure asks of a policy: whether it may be retried, and the wait it asks for.
    struct FailureAsk: Sendable {
        let isRetryable: Bool
        let retryAfter: TimeInterval?
    }

    /// Reads what `error` asks (its ``TransientError/isTransient`` and ``TransientError/retryAfter``,
    /// which are the error's own code: read where no lock is held).
    func ask(of error: any Error) -> FailureAsk {
        let isRetryable = allowsRetry(of: error)
        let retryAfter = isRetryable ? (error as? any TransientError)?.retryAfter : nil
        return FailureAsk(isRetryable: isRetryable, retryAfter: retryAfter)
    }

    /// ``delay(after:retriesUsed:)`` for a failure whose ask was read before.
    func delay(answering ask: FailureAsk, retriesUsed: Int) -> TimeInterval? {
        guard retriesUsed < retries, ask.isRetryable else { return nil }
        if let asked = ask.retryAfter, asked > maxRetryAfter { return nil }
        return delay(beforeRetry: retriesUsed + 1, retryAfter: ask.retryAfter)
    }
}

/// An error that knows whether trying again can help, and how long to wait first.
///
/// ```swift
/// struct ServiceBusy: TransientError {
///     var isTransient: Bool { true }
///     var retryAfter: TimeInterval? { 5 }
/// }
/// ```
public protocol TransientError: Error {
    /// Whether trying again later can succeed.
    var isTransient: Bool { get }
    /// How long the failure asks to wait before the next try, if it says (default none).
    var retryAfter: TimeInterval? { get }
}

extension TransientError {
    /// None by default.
    public var retryAfter: TimeInterval? { nil }
}
