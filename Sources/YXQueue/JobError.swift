/// Errors raised by the framework itself (as opposed to the errors of the work).
public enum JobError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The job's operations wait on each other in a cycle, or on an operation that is not in the job.
    case invalidOperationGraph(String)
    /// The job was canceled or dropped (thrown by ``Job/value`` and ``Job/run(on:)``).
    case canceled

    public var description: String {
        switch self {
        case .invalidOperationGraph(let why): "invalid operation graph: \(why)"
        case .canceled: "the job was canceled"
        }
    }
}
