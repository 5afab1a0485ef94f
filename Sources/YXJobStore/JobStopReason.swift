/// Why a ``JobWorker`` canceled a running handler (``StoredJobContext/stopReason``).
public enum JobStopReason: Sendable, Hashable, CustomStringConvertible {
    /// A cancel was recorded in the store (``JobStore/cancel(_:reason:)``): the job ends canceled.
    case canceledInStore
    /// The worker could not renew the lease in time (the store did not answer, or was busy, for the
    /// lease's duration): the attempt's outcome is not recorded, and the job runs again after the lease
    /// expires, on this worker or another.
    case leaseLost
    /// The job's own ``JobOptions/timeout`` passed: the attempt counts as failed.
    case timedOut
    /// The worker shuts down and its grace period ended: the job goes back to the store.
    case shutdown

    public var description: String {
        switch self {
        case .canceledInStore: "canceled in the store"
        case .leaseLost: "lease lost"
        case .timedOut: "timed out"
        case .shutdown: "shutdown"
        }
    }
}
