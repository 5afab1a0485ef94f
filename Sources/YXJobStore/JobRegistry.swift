import Foundation

/// Handlers registered by job name: the ``JobRunner`` most workers use.
///
/// Register closures by name, or `Codable` ``JobDefinition`` types with the dispatcher that runs them
/// (``register(_:on:maximumConcurrentJobs:decoder:encoder:)``); one worker claims the jobs of every name
/// its registry knows.
///
/// ```swift
/// var registry = JobRegistry()
/// registry.register("email") { payload, context in
///     try await sendMail(payload)
/// }
/// registry.register("resize", parameters: Resize.self, maximumConcurrentJobs: 2) { resize, context in
///     try await resize.run(progress: context.reportProgress)
/// }
/// registry.register(Thumbnail.self, on: dispatcher)     // a JobDefinition & Codable
/// let worker = JobWorker(store: store, runner: registry, logger: logger)
/// ```
public struct JobRegistry: JobRunner {
    /// A handler: the job's encoded parameters and its context.
    public typealias Handler = @Sendable (_ payload: Data, _ context: StoredJobContext) async throws -> Void

    /// A handler that may return the job's result.
    typealias ResultHandler = @Sendable (_ payload: Data, _ context: StoredJobContext) async throws -> Data?

    private struct Entry: Sendable {
        var handler: ResultHandler
        var maximumConcurrentJobs: Int?
    }

    private var entries: [String: Entry] = [:]
    private var order: [String] = []

    /// An empty registry.
    public init() {}

    /// Registers (or replaces) the handler of `name`.
    ///
    /// - Parameters:
    ///   - name: The job name stored with each job.
    ///   - maximumConcurrentJobs: The most jobs of this name the worker runs at once; `nil` for no own cap.
    ///   - handler: Runs one job. See ``JobRunner`` for how its ending decides the outcome.
    public mutating func register(_ name: String, maximumConcurrentJobs: Int? = nil, handler: @escaping Handler) {
        registerReturning(name, maximumConcurrentJobs: maximumConcurrentJobs) { payload, context in
            try await handler(payload, context)
            return nil
        }
    }

    /// Registers (or replaces) a handler that may return the job's result.
    mutating func registerReturning(
        _ name: String, maximumConcurrentJobs: Int?, handler: @escaping ResultHandler
    ) {
        if entries[name] == nil { order.append(name) }
        entries[name] = Entry(handler: handler, maximumConcurrentJobs: maximumConcurrentJobs.map { max(1, $0) })
    }

    /// Registers a handler whose parameters are JSON-decoded first; parameters that do not decode
    /// discard the job with the decoder's message.
    public mutating func register<Parameters: Decodable & Sendable>(
        _ name: String,
        parameters: Parameters.Type,
        maximumConcurrentJobs: Int? = nil,
        handler: @escaping @Sendable (_ parameters: Parameters, _ context: StoredJobContext) async throws -> Void
    ) {
        register(name, maximumConcurrentJobs: maximumConcurrentJobs) { payload, context in
            let parameters: Parameters
            do {
                parameters = try JSONDecoder().decode(Parameters.self, from: payload)
            } catch {
                throw JobHandlerError.discard("parameters of \(name) do not decode: \(error)")
            }
            try await handler(parameters, context)
        }
    }

    public var jobNames: [String] { order }

    public func maximumConcurrentJobs(named name: String) -> Int? {
        entries[name]?.maximumConcurrentJobs
    }

    public func run(_ job: ClaimedJob, context: StoredJobContext) async throws -> Data? {
        guard let entry = entries[job.name] else {
            throw JobHandlerError.discard("no handler is registered for job name \"\(job.name)\"")
        }
        return try await entry.handler(job.payload, context)
    }
}
