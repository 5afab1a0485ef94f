/// Errors a handler throws to decide its job's outcome beyond "failed, retry".
public enum JobHandlerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The job cannot be run at all (its parameters do not decode, its name is unknown): it ends
    /// ``StoredJobState/discarded`` with this reason, without retry.
    case discard(String)
    /// The job failed in a way a retry cannot fix: it ends ``StoredJobState/failed`` at once.
    case doNotRetry(String)

    public var description: String {
        switch self {
        case .discard(let reason): reason
        case .doNotRetry(let reason): reason
        }
    }
}
