/// Errors raised by the framework itself (as opposed to the errors of the work).
///
/// A canceled or dropped job is reported with Swift's `CancellationError`, as Swift code expects.
public enum JobError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The job's operations wait on each other in a cycle, or on an operation that is not in the job.
    case invalidOperationGraph(String)
    /// An operation cannot run as it was made (for example a ``ValueOperation`` that does not override
    /// ``ValueOperation/produce(completion:)``).
    case invalidOperation(String)
    /// The job ran longer than its deadline (see ``Job/deadline``); its operations were canceled.
    case deadlineExceeded(Duration)

    public var description: String {
        switch self {
        case .invalidOperationGraph(let why): "invalid operation graph: \(why)"
        case .invalidOperation(let why): "invalid operation: \(why)"
        case .deadlineExceeded(let limit): "the job ran longer than its deadline (\(limit))"
        }
    }
}
