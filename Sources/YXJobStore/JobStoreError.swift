/// Why a store call failed.
public enum JobStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The store was closed.
    case closed
    /// A dependency names a job that is not in the store.
    case unknownDependency(JobID)
    /// The database holds a schema newer than this library knows (written by a newer version).
    case schemaTooNew(found: Int, supported: Int)
    /// A value out of range (an empty name, a negative limit…).
    case invalidArgument(String)
    /// The database answered something the store did not expect.
    case invalidResponse(String)
    /// The store location could not be understood (a malformed `postgres://` URL…).
    case invalidLocation(String)
    /// The database did not answer in time.
    case timedOut(String)

    public var description: String {
        switch self {
        case .closed: "the job store is closed"
        case .unknownDependency(let id): "dependency \(id) is not in the store"
        case .schemaTooNew(let found, let supported):
            "the store's schema is version \(found); this library supports up to \(supported)"
        case .invalidArgument(let message): "invalid argument: \(message)"
        case .invalidResponse(let message): "unexpected answer from the database: \(message)"
        case .invalidLocation(let message): "invalid store location: \(message)"
        case .timedOut(let message): "timed out: \(message)"
        }
    }
}
