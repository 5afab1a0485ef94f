import Foundation

/// How one attempt ended, as a worker records it.
public enum JobOutcome: Sendable, Hashable {
    /// The handler returned.
    case succeeded
    /// The attempt failed and the job may run again after `delay` (counted from the store's clock).
    case retry(after: Duration, error: String)
    /// The attempt failed and the job fails for good.
    case failed(error: String)
    /// The job was canceled while it ran.
    case canceled(reason: String)
    /// The job cannot run: unknown name or parameters that do not decode.
    case discarded(reason: String)
    /// The worker gives the job back without running it to the end (graceful shutdown, or a
    /// ``JobRelease``); the attempt does not count as a failure. The job may be claimed again after
    /// `delay` (counted from the store's clock; zero: at once).
    case released(after: Duration)

    /// The state the job is in once this outcome is recorded.
    public var resultingState: StoredJobState {
        switch self {
        case .succeeded: .succeeded
        case .retry, .released: .available
        case .failed: .failed
        case .canceled: .canceled
        case .discarded: .discarded
        }
    }

    /// The error or reason text, if any.
    public var message: String? {
        switch self {
        case .succeeded, .released: nil
        case .retry(_, let error), .failed(let error): error
        case .canceled(let reason), .discarded(let reason): reason
        }
    }
}

/// One outcome to record, fenced by the lease of the attempt that produced it.
public struct JobCompletion: Sendable, Hashable {
    /// The attempt.
    public var lease: JobLease
    /// How it ended.
    public var outcome: JobOutcome
    /// The last progress of the attempt, recorded with the outcome when given.
    public var progress: JobProgress?
    /// What the job produced, recorded with a ``JobOutcome/succeeded`` outcome (ignored with others).
    public var result: Data?

    /// The outcome of the attempt that `lease` names.
    public init(lease: JobLease, outcome: JobOutcome, progress: JobProgress? = nil, result: Data? = nil) {
        self.lease = lease
        self.outcome = outcome
        self.progress = progress
        self.result = result
    }
}
