import Foundation
import YXQueue

/// Everything a store keeps about one job, as read by ``JobStore/job(_:)`` or ``JobStore/jobs(_:)``.
public struct JobRecord: Sendable, Hashable, Codable {
    /// The job's identifier.
    public var id: JobID
    /// The registered name.
    public var name: String
    /// Where the job is in its life.
    public var state: StoredJobState
    /// The encoded parameters.
    public var payload: Data
    /// The number of claims so far (the attempt number of the latest one).
    public var attempt: Int
    /// Failed attempts so far (handler errors, timeouts, expired leases).
    public var failures: Int
    /// Expired leases so far: attempts whose worker stopped answering.
    public var leaseExpiries: Int
    /// How often it may fail and how long it waits between attempts.
    public var retry: RetryPolicy
    /// Its own time limit per attempt.
    public var timeout: Duration?
    /// Larger runs first.
    public var priority: Int
    /// The key it counts under for concurrency limits.
    public var concurrencyKey: String
    /// The key it holds among live jobs, if any.
    public var uniqueKey: String?
    /// Jobs this one waits on.
    public var dependencies: [JobID]
    /// When the job was enqueued.
    public var enqueuedAt: Date
    /// When it may run (not-before, or the time of its retry).
    public var readyAt: Date
    /// When its latest attempt started.
    public var startedAt: Date?
    /// When it reached its terminal state.
    public var finishedAt: Date?
    /// The worker running it, while it runs.
    public var owner: String?
    /// When its lease ends unless renewed, while it runs.
    public var leaseUntil: Date?
    /// Whether a cancel was recorded while it ran.
    public var cancelRequested: Bool
    /// The latest progress its worker recorded.
    public var progress: JobProgress
    /// The error of the latest failed attempt, or the reason of a cancel or discard.
    public var message: String?
    /// What the job produced, once it succeeded, if its runner returned something: for a stored
    /// ``JobDefinition`` whose output is `Encodable`, the output as JSON (see ``decodedResult(as:decoder:)``).
    public var result: Data?

    /// A record as a store read it.
    public init(
        id: JobID, name: String, state: StoredJobState, payload: Data, attempt: Int, failures: Int, leaseExpiries: Int,
        retry: RetryPolicy, timeout: Duration?, priority: Int, concurrencyKey: String, uniqueKey: String?,
        dependencies: [JobID], enqueuedAt: Date, readyAt: Date, startedAt: Date?, finishedAt: Date?,
        owner: String?, leaseUntil: Date?, cancelRequested: Bool, progress: JobProgress, message: String?,
        result: Data? = nil
    ) {
        self.id = id
        self.name = name
        self.state = state
        self.payload = payload
        self.attempt = attempt
        self.failures = failures
        self.leaseExpiries = leaseExpiries
        self.retry = retry
        self.timeout = timeout
        self.priority = priority
        self.concurrencyKey = concurrencyKey
        self.uniqueKey = uniqueKey
        self.dependencies = dependencies
        self.enqueuedAt = enqueuedAt
        self.readyAt = readyAt
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.owner = owner
        self.leaseUntil = leaseUntil
        self.cancelRequested = cancelRequested
        self.progress = progress
        self.message = message
        self.result = result
    }

    /// The job's result decoded from JSON, or `nil` when it has none (not succeeded, or nothing
    /// returned).
    ///
    /// ```swift
    /// let size = try await store.job(id)?.decodedResult(as: Thumbnail.Output.self)
    /// ```
    ///
    /// - Throws: What the decoder throws when the result is not a `T`.
    public func decodedResult<T: Decodable>(as type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> T? {
        guard let result else { return nil }
        return try decoder.decode(T.self, from: result)
    }
}

/// Which jobs ``JobStore/jobs(_:)`` returns, in identifier order.
public struct JobQuery: Sendable, Hashable {
    /// Only jobs in these states; `nil` for all.
    public var states: Set<StoredJobState>?
    /// Only jobs with these names; `nil` for all.
    public var names: [String]?
    /// Only jobs with an identifier above this one (for paging).
    public var after: JobID?
    /// The most records to return.
    public var limit: Int

    /// A query; every filter is optional.
    public init(states: Set<StoredJobState>? = nil, names: [String]? = nil, after: JobID? = nil, limit: Int = 1000) {
        self.states = states
        self.names = names
        self.after = after
        self.limit = limit
    }
}
