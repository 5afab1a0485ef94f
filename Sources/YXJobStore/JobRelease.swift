/// Thrown by a ``JobRunner`` for a job that this worker cannot run but another may, or that cannot run
/// yet for a reason that is not the job's fault: the attempt ends ``JobOutcome/released(after:)``, as when
/// a worker shuts down. The job is available again at once, or after ``delay``, and no attempt is
/// counted against its retry policy.
///
/// For a fault of the worker, not of the job: its disk is full, its folder cannot be written. A worker
/// that keeps claiming would take the job back at once, so stop it too (a service that ends, say):
///
/// ```swift
/// catch let error as POSIXError where error.code == .ENOSPC {
///     onLocalFault(error)                       // stops this worker
///     throw JobRelease("no space left here")    // another worker takes the job
/// }
/// ```
///
/// A job whose resource another process holds for a while can go back for later, so that the worker's
/// slot serves other jobs meanwhile:
///
/// ```swift
/// throw JobRelease("the file is locked by another process", after: .seconds(30))
/// ```
public struct JobRelease: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why the job was given back.
    public var reason: String
    /// How long the job waits before it may be claimed again (zero: at once).
    public var delay: Duration

    /// A release for `reason`; the job may be claimed again after `delay` (a negative delay is zero).
    public init(_ reason: String, after delay: Duration = .zero) {
        self.reason = reason
        self.delay = max(delay, .zero)
    }

    public var description: String { reason }
}
