/// What ``JobStore/enqueue(_:)`` did with one ``JobRequest``.
public enum EnqueueResult: Sendable, Hashable {
    /// Stored under a new identifier; it is in the store when `enqueue` returns.
    case enqueued(JobID)
    /// Not stored: a live job holds the same unique key, and the request asked to join it.
    case joined(existing: JobID)
    /// Not stored: a live job holds the same unique key, and the request asked to be refused.
    case refused(existing: JobID)

    /// The job the caller should follow: the new one, or the live one that holds the key.
    public var id: JobID {
        switch self {
        case .enqueued(let id), .joined(let id), .refused(let id): id
        }
    }

    /// Whether a new job was stored.
    public var isNew: Bool {
        if case .enqueued = self { return true }
        return false
    }
}
