/// One thing that happened to a ``Job``, as delivered to closure observers and async streams.
///
/// Within one attempt the order is: ``started`` (when the first operation begins), any number of
/// ``progress(_:)`` with non-decreasing values and ``retrying(after:error:)``, then exactly one terminal
/// event. A job canceled or dropped before any of its operations ran receives only its terminal event.
public enum JobEvent: Sendable, CustomStringConvertible {
    /// The job's first operation began executing.
    case started
    /// Overall progress of the attempt, between 0 and 1.
    case progress(Double)
    /// An operation failed with an error its job's ``RetryPolicy`` retries: the job's work is tried again
    /// after `delay` (the attempt goes on; no queue slot is held while it waits).
    case retrying(after: Duration, error: any Error)
    /// The job finished; the associated value is its result.
    case finished((any Sendable)?)
    /// The job failed with this error.
    case failed(any Error)
    /// The job was canceled (or dropped: check ``Job/state``).
    case canceled

    /// Whether this event ends the attempt.
    public var isTerminal: Bool {
        switch self {
        case .started, .progress, .retrying: false
        case .finished, .failed, .canceled: true
        }
    }

    public var description: String {
        switch self {
        case .started: "started"
        case .progress(let value): "progress(\(value))"
        case .retrying(let delay, let error): "retrying(after: \(delay), error: \(error))"
        case .finished: "finished"
        case .failed(let error): "failed(\(error))"
        case .canceled: "canceled"
        }
    }
}
