import Foundation
import YXQueue

/// Stored ``JobDefinition``s, run through a YXQueue `Dispatcher`.
extension JobRegistry {
    /// Registers a `Codable` job definition: the worker claims the stored jobs of its static `name`,
    /// decodes each, and runs it on `dispatcher`, so that the dispatcher's machinery applies to it as to
    /// any in-process job.
    ///
    /// ```swift
    /// struct Thumbnail: JobDefinition, Codable {
    ///     static let name = "thumbnail"
    ///     let path: String
    ///     var work: JobWork<Int> {
    ///         let bytes = JobStep(on: "io") { _ in try Data(contentsOf: URL(fileURLWithPath: path)) }
    ///         let size = JobStep(on: "cpu", after: bytes) { data, context in try render(data, context) }
    ///         return JobWork(size)
    ///     }
    /// }
    ///
    /// let dispatcher = Dispatcher(name: "worker", queues: ["io": 4, "cpu": 2])
    /// var registry = JobRegistry()
    /// registry.register(Thumbnail.self, on: dispatcher)
    /// let worker = JobWorker(store: store, runner: registry)
    /// ```
    ///
    /// For each claimed job:
    /// - **Decode.** The payload is decoded as `Definition`; one that does not decode (the type changed
    ///   since it was stored) ends the job `discarded`, with the decoder's message.
    /// - **Run.** The definition starts on `dispatcher` (``Dispatcher/start(_:tag:callbackQueue:)``):
    ///   its steps run on the dispatcher's queues under the dispatcher's limits, shared with every other
    ///   job of the dispatcher, stored or not; its graph, deadline and its own
    ///   ``JobDefinition/retryPolicy`` (retries of failed steps within this attempt) work as in process.
    /// - **Progress.** The job's aggregated progress events become the stored job's progress, written
    ///   by the worker's heartbeat (throttled: ``JobWorker/Configuration/progressInterval``), where any
    ///   process reads it.
    /// - **Cancel.** When the worker stops the attempt (a cancel recorded in the store, noticed within
    ///   ``JobWorker/Configuration/cancelCheckInterval``; a lost lease; the job's timeout; a shutdown),
    ///   the job is canceled on the dispatcher, and the handler returns once it has ended.
    /// - **Outcome.** Success stores the output as the job's result, JSON-encoded, when the output type
    ///   is `Encodable` (read it with ``JobRecord/decodedResult(as:decoder:)``); otherwise no result. A
    ///   failure is a failed attempt, retried across attempts as ``JobOptions/retry`` says.
    ///
    /// The worker's ``JobWorker/Configuration/maximumConcurrentJobs`` (and `maximumConcurrentJobs`
    /// here) bound how many stored jobs are active on the dispatcher at once; claimed jobs that wait for
    /// a queue slot keep their lease.
    ///
    /// - Parameters:
    ///   - type: The definition type; its static `name` is the stored name.
    ///   - dispatcher: Where the jobs run.
    ///   - maximumConcurrentJobs: The most jobs of this name the worker runs at once; `nil` for no own cap.
    ///   - decoder: How payloads are decoded.
    ///   - encoder: How outputs are encoded.
    public mutating func register<Definition: JobDefinition & Decodable>(
        _ type: Definition.Type,
        on dispatcher: Dispatcher,
        maximumConcurrentJobs: Int? = nil,
        decoder: JSONDecoder = JSONDecoder(),
        encoder: JSONEncoder = JSONEncoder()
    ) {
        let runner = DispatchedDefinition<Definition>(dispatcher: dispatcher, decoder: decoder, encoder: encoder)
        registerReturning(Definition.name, maximumConcurrentJobs: maximumConcurrentJobs) { payload, context in
            try await runner.run(payload, context: context)
        }
    }
}

/// Runs the stored jobs of one definition type on a dispatcher: decode, start, forward progress,
/// forward cancel, encode the output.
struct DispatchedDefinition<Definition: JobDefinition & Decodable>: Sendable {
    let dispatcher: Dispatcher
    let decoder: JSONDecoder
    let encoder: JSONEncoder

    func run(_ payload: Data, context: StoredJobContext) async throws -> Data? {
        let definition: Definition
        do {
            definition = try decoder.decode(Definition.self, from: payload)
        } catch {
            throw JobHandlerError.discard("parameters of \(Definition.name) do not decode: \(error)")
        }
        let handle = JobHandle(definition)
        // Observed before the start, so that no event is missed; the box keeps the latest for the heartbeat.
        let progress = handle.job.onProgress { _, fraction in context.reportProgress(fraction) }
        defer { progress.invalidate() }
        // Cancelling this task (the worker stopping the attempt) cancels the job; the call returns when
        // the job has ended, so that no step of it runs on after the worker recorded the outcome.
        let result = try await handle.job.run(on: dispatcher)
        guard let output = result as? Definition.Output else {
            throw JobHandlerError.doNotRetry("the job's result is not a \(Definition.Output.self)")
        }
        return encodedResult(output, context: context)
    }

    /// The output as JSON, when its type is `Encodable`; `nil` otherwise (or when it does not encode:
    /// the job still succeeded).
    private func encodedResult(_ output: Definition.Output, context: StoredJobContext) -> Data? {
        guard let encodable = output as? any Encodable else { return nil }
        do {
            return try encoder.encode(encodable)
        } catch {
            context.logger.warning(
                "the output does not encode; the job succeeds without a result",
                metadata: ["error": "\(error)"]
            )
            return nil
        }
    }
}
