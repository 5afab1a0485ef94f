import Dispatch

/// Running ``JobDefinition``s: start one, submit one under back-pressure, or run one and wait for its
/// typed output.
extension Dispatcher {
    /// Starts a job from its definition, at once.
    ///
    /// ```swift
    /// let handle = dispatcher.start(Thumbnail(path: path, width: 128))
    /// let data = try await handle.value      // Data: no cast
    /// ```
    ///
    /// - Parameters:
    ///   - definition: What to run.
    ///   - tag: A number of your choosing, to tell jobs apart.
    ///   - callbackQueue: Where the job's callbacks are delivered.
    @discardableResult
    public func start<Definition: JobDefinition>(
        _ definition: Definition, tag: Int = 0, callbackQueue: DispatchQueue = Job.defaultCallbackQueue
    ) -> JobHandle<Definition.Output> {
        let handle = JobHandle(definition, tag: tag, callbackQueue: callbackQueue)
        handle.start(on: self)
        return handle
    }

    /// Starts a job from its definition once fewer than ``maxPendingJobs`` jobs are active, waiting
    /// without blocking a thread until then: a producer of millions of jobs keeps memory flat.
    ///
    /// ```swift
    /// let dispatcher = Dispatcher(queues: ["mail": 8], maxPendingJobs: 1_000)
    /// for address in addresses {                         // millions
    ///     try await dispatcher.submit(SendMail(to: address))
    /// }
    /// ```
    ///
    /// - Throws: `CancellationError` when the waiting task is cancelled (the job is not started).
    @discardableResult
    public func submit<Definition: JobDefinition>(
        _ definition: Definition, tag: Int = 0, callbackQueue: DispatchQueue = Job.defaultCallbackQueue
    ) async throws -> JobHandle<Definition.Output> {
        try await waitForRoom()
        defer { releaseReservation() }
        return start(definition, tag: tag, callbackQueue: callbackQueue)
    }

    /// Runs a job from its definition and returns its output. Cancelling the calling task cancels the
    /// job.
    ///
    /// ```swift
    /// let lines: Int = try await dispatcher.run(CountLines(path: "/var/log/syslog"))
    /// ```
    ///
    /// - Throws: The job's error, or `CancellationError` when it was canceled.
    public func run<Definition: JobDefinition>(
        _ definition: Definition, tag: Int = 0, callbackQueue: DispatchQueue = Job.defaultCallbackQueue
    ) async throws -> Definition.Output {
        let job = DefinitionJob(definition, tag: tag, callbackQueue: callbackQueue)
        return try JobHandle<Definition.Output>.output(from: try await job.run(on: self))
    }
}
