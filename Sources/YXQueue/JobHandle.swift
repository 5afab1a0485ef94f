import Dispatch

/// A typed handle on a job started from a ``JobDefinition``: its value has the definition's output
/// type, its events carry it, and it can be canceled.
///
/// ```swift
/// let handle = dispatcher.start(Thumbnail(path: "/tmp/a.jpg", width: 128))
/// for await event in handle.events {
///     if case .progress(let fraction) = event { print("\(Int(fraction * 100)) %") }
/// }
/// let data: Data = try await handle.value
/// ```
///
/// The class-layer ``Job`` behind it is ``job``: add delegates to it, read its state, restart it.
public struct JobHandle<Output: Sendable>: Sendable {
    /// The job that runs the definition (delegates, closure observers, state, restart).
    public let job: Job

    init(job: Job) {
        self.job = job
    }

    /// A job for `definition` that is not started yet: add delegates to ``job``, then ``start(on:)`` it.
    ///
    /// ```swift
    /// let handle = JobHandle(Thumbnail(path: path, width: 128))
    /// handle.job.addDelegate(logger)        // before it starts: no callback can be missed
    /// handle.start(on: dispatcher)
    /// ```
    public init<Definition: JobDefinition>(
        _ definition: Definition, tag: Int = 0, callbackQueue: DispatchQueue = Job.defaultCallbackQueue
    ) where Definition.Output == Output {
        self.job = DefinitionJob(definition, tag: tag, callbackQueue: callbackQueue)
    }

    /// Starts (or restarts) the job on `dispatcher` (see ``Job/start(on:)``).
    ///
    /// - Returns: Whether a new attempt began.
    @discardableResult
    public func start(on dispatcher: Dispatcher = .shared) -> Bool {
        job.start(on: dispatcher)
    }

    /// The output of the current attempt, waiting for it to end (see ``Job/value``).
    ///
    /// - Throws: The job's error, or `CancellationError` when the job was canceled or dropped or the
    ///   awaiting task was cancelled.
    public var value: Output {
        get async throws { try Self.output(from: try await job.value) }
    }

    /// The output, once the job finished successfully.
    public var output: Output? {
        guard job.state == .finished else { return nil }
        return try? Self.output(from: job.result)
    }

    /// The current state.
    public var state: JobState { job.state }
    /// The progress of the current (or last) attempt, from 0 to 1.
    public var progress: Double { job.progress }
    /// The error, once the job failed.
    public var error: (any Error)? { job.error }

    /// Cancels the job (see ``Job/cancel()``).
    public func cancel() { job.cancel() }

    /// Begins a new attempt of a canceled or failed job (see ``Job/restart()``).
    @discardableResult
    public func restart() -> Bool { job.restart() }

    /// The events of the current attempt, typed, from now on, ending after its terminal event.
    ///
    /// Asked for after the attempt ended (a short job started by ``Dispatcher/start(_:tag:callbackQueue:)``
    /// may end before the caller gets here), the stream holds that attempt's terminal event alone. Before
    /// the first ``start(on:)``, it follows the first attempt; after ``restart()``, the new one.
    public var events: AsyncStream<Event> {
        job.eventStream(endedAttempt: true) { Event($0) }
    }

    /// One thing that happened to the job (the typed form of ``JobEvent``).
    public enum Event: Sendable {
        /// The job's first step began.
        case started
        /// Overall progress, between 0 and 1.
        case progress(Double)
        /// A step failed with an error the retry policy retries; the work goes on after `after`.
        case retrying(after: Duration, error: any Error)
        /// The job finished with its output.
        case finished(Output)
        /// The job failed.
        case failed(any Error)
        /// The job was canceled or dropped.
        case canceled

        init(_ event: JobEvent) {
            switch event {
            case .started: self = .started
            case .progress(let value): self = .progress(value)
            case .retrying(let delay, let error): self = .retrying(after: delay, error: error)
            case .finished(let result):
                do {
                    self = .finished(try JobHandle.output(from: result))
                } catch {
                    self = .failed(error)
                }
            case .failed(let error): self = .failed(error)
            case .canceled: self = .canceled
            }
        }
    }

    static func output(from result: (any Sendable)?) throws -> Output {
        if let output = result as? Output { return output }
        throw JobError.invalidOperation("the job's result is not a \(Output.self)")
    }
}
