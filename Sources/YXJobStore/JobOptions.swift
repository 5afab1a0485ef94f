import Foundation
import YXQueue

/// Everything about a persistent job other than its name and parameters: where it counts against a
/// limit, when and in which order it runs, how it retries, whether it is unique, what it waits for.
///
/// ```swift
/// var options = JobOptions()
/// options.concurrencyKey = "download:example.com"   // "at most 8 at once" is set on the store
/// options.priority = 10
/// options.uniqueKey = "/srv/files/a.iso"
/// options.onDuplicate = .join
/// options.notBefore = Date().addingTimeInterval(60)
/// options.retry = RetryPolicy(retries: 3, initialDelay: 5, scope: .allErrors)
/// ```
public struct JobOptions: Sendable, Hashable {
    /// The key under which the job counts against a concurrency limit set with
    /// ``JobStore/setConcurrencyLimit(_:forKey:)``; `nil` means the job's name.
    ///
    /// A limit holds across every worker of the store: "at most 8 `download:example.com` jobs at once".
    /// A key without a limit runs as many jobs as the workers take.
    public var concurrencyKey: String?

    /// Larger runs first among jobs that are ready; equal priorities run in not-before order, then in
    /// enqueue order. Default 0.
    public var priority: Int

    /// The earliest time the job may start; `nil` is "now".
    public var notBefore: Date?

    /// How often the job may fail and how long it waits before each retry: YXQueue's ``RetryPolicy``,
    /// kept with the job in the store and applied across attempts (default ``defaultRetryPolicy``).
    ///
    /// - ``RetryPolicy/retries``: attempts after the first that may fail (`retries + 1` attempts in all).
    /// - The wait before retry *n* is `initialDelay × 2^(n-1)`, at most `maxDelay`, spread by `±jitter`,
    ///   and never shorter than the ``TransientError/retryAfter`` a failure asks for (one longer than
    ///   `maxRetryAfter` is not waited for: the job fails).
    /// - ``RetryPolicy/scope`` decides which handler errors are retried. Expired leases (a dead worker)
    ///   and the job's ``timeout`` count as failed attempts whatever the scope.
    ///
    /// A ``JobDefinition``'s own ``JobDefinition/retryPolicy`` is another level: it retries failed steps
    /// within one attempt, in the worker's dispatcher, before the attempt counts as failed here.
    ///
    /// - Important: YXQueue's `RetryPolicy()` retries only errors that say they are transient. Give
    ///   `scope: .allErrors` to retry any error, as ``defaultRetryPolicy`` does.
    public var retry: RetryPolicy

    /// A key that at most one live (waiting, available or running) job holds at a time. The database
    /// enforces it; ``onDuplicate`` decides what a second enqueue gets.
    public var uniqueKey: String?

    /// What an enqueue gets when a live job already holds ``uniqueKey``.
    public var onDuplicate: DuplicatePolicy

    /// Jobs that must all succeed before this one runs. When one of them fails for good, is canceled
    /// or is discarded, this job is canceled without running.
    public var dependencies: [JobID]

    /// The longest one attempt may run; the worker cancels the handler after it, and the attempt
    /// counts as failed. `nil`: no limit. Unlike the lease, this is about the job, not the worker.
    public var timeout: Duration?

    /// Default options: the name as concurrency key, priority 0, now, ``defaultRetryPolicy``, not
    /// unique, no dependencies, no timeout.
    public init(
        concurrencyKey: String? = nil,
        priority: Int = 0,
        notBefore: Date? = nil,
        retry: RetryPolicy = JobOptions.defaultRetryPolicy,
        uniqueKey: String? = nil,
        onDuplicate: DuplicatePolicy = .refuse,
        dependencies: [JobID] = [],
        timeout: Duration? = nil
    ) {
        self.concurrencyKey = concurrencyKey
        self.priority = priority
        self.notBefore = notBefore
        self.retry = retry
        self.uniqueKey = uniqueKey
        self.onDuplicate = onDuplicate
        self.dependencies = dependencies
        self.timeout = timeout
    }

    /// The retry policy of a stored job unless it says otherwise: five attempts (four retries) on any
    /// error, one second first, doubling, at most an hour, ±25 %.
    ///
    /// ```swift
    /// var options = JobOptions()
    /// options.retry = RetryPolicy(retries: 9, initialDelay: 2, maxDelay: 600, scope: .allErrors)
    /// options.retry = .never                      // one attempt
    /// ```
    public static let defaultRetryPolicy = RetryPolicy(
        retries: 4, initialDelay: 1, maxDelay: 3600, jitter: 0.25, scope: .allErrors
    )
}

/// What a second enqueue of a unique key gets while the first job is still live.
public enum DuplicatePolicy: String, Sendable, Hashable, Codable {
    /// Nothing is stored; the result is ``EnqueueResult/refused(existing:)``.
    case refuse
    /// Nothing is stored; the result is ``EnqueueResult/joined(existing:)``: the caller follows the live job.
    case join
}
