import Dispatch
import Logging

/// The steps of one build of a definition's graph (one try of an attempt): their places, and the
/// outputs of those that succeeded (kept across the tries of an attempt, so a retry does not run a
/// step that already succeeded).
final class StepBuild: Sendable {
    private let indices: [ObjectIdentifier: Int]
    let outputs: StepOutputs

    init(indices: [ObjectIdentifier: Int], outputs: StepOutputs) {
        self.indices = indices
        self.outputs = outputs
    }

    func index(of step: AnyJobStep) -> Int? { indices[ObjectIdentifier(step)] }

    func output(of step: AnyJobStep) -> (any Sendable)? {
        index(of: step).flatMap { outputs.value(at: $0) }
    }
}

/// The outputs of the steps of one attempt, by place in the graph.
final class StepOutputs: Sendable {
    let attempt: Int
    private let values = Locked<[Int: any Sendable]>([:])

    init(attempt: Int) {
        self.attempt = attempt
    }

    func value(at index: Int) -> (any Sendable)? { values.withLock { $0[index] } }
    func store(_ value: any Sendable, at index: Int) { values.withLock { $0[index] = value } }
}

/// Runs one ``JobStep`` of a ``JobDefinition``'s graph: a synchronous body on a pool thread, an `async`
/// one in a task, or nothing when an earlier try of the attempt already produced the step's output.
final class StepOperation: QueueOperation, @unchecked Sendable {
    private let step: AnyJobStep?
    private let index: Int
    private let build: StepBuild?
    private let jobName: String
    private let task = Locked<Task<Void, Never>?>(nil)

    init(step: AnyJobStep, index: Int, build: StepBuild, jobName: String) {
        self.step = step
        self.index = index
        self.build = build
        self.jobName = jobName
        super.init(queue: step.queue, resourceIdentifier: "step \(index)")
    }

    /// Not used: steps are made by the definition's manager.
    required init(queue: String, resourceIdentifier: String? = nil) {
        self.step = nil
        self.index = 0
        self.build = nil
        self.jobName = ""
        super.init(queue: queue, resourceIdentifier: resourceIdentifier)
    }

    /// A task's body or a known output starts at once; a synchronous body needs a pool thread.
    override var executesInline: Bool {
        guard let step, let build else { return true }
        if build.outputs.value(at: index) != nil { return true }
        if case .async = step.body { return true }
        return false
    }

    override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        guard let step, let build else {
            return completion(.failure(JobError.invalidOperation("a step operation made without a step")))
        }
        if let known = build.outputs.value(at: index) { return completion(.success(known)) }
        let attempt = job?.attempt ?? 0
        var logger = job?.dispatcher?.logger ?? Dispatcher.silentLogger
        logger[metadataKey: "job"] = "\(jobName)"
        let context = JobContext(operation: self, build: build, jobName: jobName, attempt: attempt, logger: logger)
        let index = index
        switch step.body {
        case .sync(let body):
            do {
                let value = try body(context)
                build.outputs.store(value, at: index)
                completion(.success(value))
            } catch {
                completion(.failure(error))
            }
        case .async(let body):
            let work = Task {
                do {
                    let value = try await body(context)
                    build.outputs.store(value, at: index)
                    completion(.success(value))
                } catch {
                    completion(.failure(error))
                }
            }
            task.withLock { $0 = work }
            if isCancelled { work.cancel() }
        }
    }

    override func operationDidCancel() {
        task.withLock { $0 }?.cancel()
    }
}
