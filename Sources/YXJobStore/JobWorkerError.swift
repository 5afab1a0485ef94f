/// Why ``JobWorker/run()`` refused to start.
public enum JobWorkerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// `run()` was called a second time; a worker runs once.
    case alreadyStarted
    /// The runner registers no job name: the worker would claim nothing.
    case noJobNames

    public var description: String {
        switch self {
        case .alreadyStarted: "the worker was already started; a worker runs once"
        case .noJobNames: "the worker's runner has no job names"
        }
    }
}
