import Logging

/// What a step's body can ask of the job it runs for: report progress, notice cancellation, read the
/// outputs of the steps it waited for.
///
/// ```swift
/// JobStep(on: "net", after: [manifest, key]) { context in
///     let files = try context.output(of: manifest)
///     for (index, file) in files.enumerated() {
///         try context.checkCancellation()
///         try await upload(file, key: try context.output(of: key))
///         context.reportProgress(Double(index + 1) / Double(files.count))
///     }
/// }
/// ```
public struct JobContext: Sendable {
    let operation: StepOperation
    /// The graph's steps and outputs (nil for a definition of one step: it reads no output).
    let build: StepBuild?

    /// The job's name (``JobDefinition/name``).
    public var jobName: String { operation.definition?.name ?? "" }
    /// The attempt this step belongs to (1 for the first, 2 after a restart, …).
    public let attempt: Int
    /// The dispatcher's logger, with the job in its metadata (made when asked for: most steps never log,
    /// and the metadata costs an allocation).
    public var logger: Logger {
        var logger = operation.job?.dispatcher?.logger ?? Dispatcher.silentLogger
        logger[metadataKey: "job"] = .string(jobName)
        return logger
    }

    /// Reports the fraction of this step's work that is done (0…1). Cheap; call it as often as you like:
    /// the job aggregates and throttles.
    public func reportProgress(_ fraction: Double) {
        operation.reportProgress(fraction)
    }

    /// Whether the job was canceled (an `async` body's task is cancelled too).
    public var isCancelled: Bool { operation.isCancelled }

    /// Throws `CancellationError` when the job was canceled.
    public func checkCancellation() throws {
        if operation.isCancelled { throw CancellationError() }
    }

    /// The output of a step this step waited for.
    ///
    /// - Throws: ``JobError/invalidOperationGraph(_:)`` when `step` is not one of this step's
    ///   prerequisites (directly or not) in this job.
    public func output<T: Sendable>(of step: JobStep<T>) throws -> T {
        guard let value = build?.output(of: step) as? T else {
            throw JobError.invalidOperationGraph("a step read the output of a step it does not wait for")
        }
        return value
    }
}
