/// Receives the lifecycle callbacks of the jobs it is added to.
///
/// Every method is optional (the protocol extension provides empty defaults). Callbacks of one job
/// arrive in order on that job's ``Job/callbackQueue``, never two at the same time. For each attempt a
/// delegate gets at most one ``jobDidStart(_:)``, progress only after it, and exactly one terminal
/// callback (``job(_:didFinishWith:)``, ``job(_:didFailWith:)`` or ``jobDidCancel(_:)``) last.
///
/// A job holds its delegates weakly: a delegate that goes away is dropped, never called, never kept
/// alive.
///
/// ```swift
/// final class Printer: JobDelegate {
///     func job(_ job: Job, didFinishWith result: (any Sendable)?) { print("done:", job) }
/// }
/// ```
public protocol JobDelegate: AnyObject, Sendable {
    /// The job's first operation began executing.
    func jobDidStart(_ job: Job)
    /// The job's overall progress changed (throttled to about ten calls a second).
    func job(_ job: Job, didUpdateProgress progress: Double)
    /// The job finished successfully with this result.
    func job(_ job: Job, didFinishWith result: (any Sendable)?)
    /// An operation failed with an error the job's ``RetryPolicy`` retries: the work is tried again after
    /// `delay`.
    func job(_ job: Job, willRetryAfter delay: Duration, error: any Error)
    /// The job failed with this error.
    func job(_ job: Job, didFailWith error: any Error)
    /// The job was canceled or dropped.
    func jobDidCancel(_ job: Job)
}

extension JobDelegate {
    public func jobDidStart(_ job: Job) {}
    public func job(_ job: Job, didUpdateProgress progress: Double) {}
    public func job(_ job: Job, didFinishWith result: (any Sendable)?) {}
    public func job(_ job: Job, willRetryAfter delay: Duration, error: any Error) {}
    public func job(_ job: Job, didFailWith error: any Error) {}
    public func jobDidCancel(_ job: Job) {}
}

/// A weak reference to a delegate, as stored by a job.
struct WeakDelegate: Sendable {
    weak var value: (any JobDelegate)?
}
