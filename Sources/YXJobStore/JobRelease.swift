/// Thrown by a ``JobRunner`` for a job that this worker cannot run but another may: the attempt ends
/// ``JobOutcome/released``, as when a worker shuts down. The job is available again at once, and no
/// attempt is counted against its retry policy.
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
public struct JobRelease: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why the job was given back.
    public var reason: String

    /// A release for `reason`.
    public init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}
