import Foundation
import YXQueue

/// A job a worker claimed: what its handler needs, and the lease its outcome must carry.
public struct ClaimedJob: Sendable, Hashable {
    /// The lease of this attempt: the job, the attempt number and the owner.
    public var lease: JobLease
    /// The registered name.
    public var name: String
    /// The encoded parameters.
    public var payload: Data
    /// Failed attempts before this one.
    public var failures: Int
    /// The job's retry policy.
    public var retry: RetryPolicy
    /// The job's own time limit per attempt, if any.
    public var timeout: Duration?
    /// The job's priority.
    public var priority: Int
    /// The key the job counts under for concurrency limits.
    public var concurrencyKey: String
    /// When the job was enqueued.
    public var enqueuedAt: Date
    /// When the job became ready to run (its not-before time, or its retry time).
    public var readyAt: Date

    /// The job's identifier.
    public var id: JobID { lease.id }
    /// The attempt number (1 for the first claim).
    public var attempt: Int { lease.attempt }

    /// A claimed job as a store read it.
    public init(
        lease: JobLease,
        name: String,
        payload: Data,
        failures: Int,
        retry: RetryPolicy,
        timeout: Duration?,
        priority: Int,
        concurrencyKey: String,
        enqueuedAt: Date,
        readyAt: Date
    ) {
        self.lease = lease
        self.name = name
        self.payload = payload
        self.failures = failures
        self.retry = retry
        self.timeout = timeout
        self.priority = priority
        self.concurrencyKey = concurrencyKey
        self.enqueuedAt = enqueuedAt
        self.readyAt = readyAt
    }
}
