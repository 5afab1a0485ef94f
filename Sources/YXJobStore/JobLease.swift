/// One attempt of a job, as held by one worker: the fence every outcome and heartbeat goes through.
///
/// A store records an outcome, a heartbeat or progress only `WHERE id = … AND attempt = … AND owner = …`
/// and only while the job is running: once a lease expired and another worker claimed the job (a new
/// attempt), the old worker's writes are refused.
public struct JobLease: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The job.
    public var id: JobID
    /// The attempt number the claim gave (1 for the first claim; it grows with every claim).
    public var attempt: Int
    /// The worker that claimed it.
    public var owner: String

    /// The lease of `attempt` of job `id`, held by `owner`.
    public init(id: JobID, attempt: Int, owner: String) {
        self.id = id
        self.attempt = attempt
        self.owner = owner
    }

    public var description: String { "job \(id) attempt \(attempt) (\(owner))" }
}
