/// What ``JobStore/cancel(_:reason:)`` did.
public enum CancelResult: Sendable, Hashable {
    /// The job had not started: it is now canceled (and so are the jobs that waited on it).
    case canceled
    /// The job is running: the cancel is recorded, and its worker stops it within about a second.
    case requested
    /// The job had already ended in this state; nothing changed.
    case alreadyFinished(StoredJobState)
    /// No job has this identifier.
    case notFound
}
