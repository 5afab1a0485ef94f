import Dispatch
import Logging

/// The steps of one build of a definition's graph (one try of an attempt): their places, and the
/// outputs of those that succeeded (kept across the tries of an attempt, so a retry does not run a
/// step that already succeeded).
final class StepBuild: Sendable {
    /// The steps in graph order: a step's place is its index.
    private let steps: [AnyJobStep]
    /// Places by step, for graphs too large to search (nil: `steps` is searched).
    private let indices: [ObjectIdentifier: Int]?
    let outputs: StepOutputs

    /// Graphs of up to this many steps are searched, not hashed (most have one step).
    static let searchedSteps = 8

    /// - Parameter steps: Each step once.
    init(steps: [AnyJobStep], outputs: StepOutputs) {
        self.steps = steps
        self.indices = steps.count <= Self.searchedSteps
            ? nil : Dictionary(uniqueKeysWithValues: steps.enumerated().map { (ObjectIdentifier($1), $0) })
        self.outputs = outputs
    }

    func index(of step: AnyJobStep) -> Int? {
        if let indices { return indices[ObjectIdentifier(step)] }
        return steps.firstIndex { $0 === step }
    }

    func output(of step: AnyJobStep) -> (any Sendable)? {
        index(of: step).flatMap { outputs.value(at: $0) }
    }

    /// The output of the final step, the job's result (the graph's walk puts the final step last).
    var finalOutput: (any Sendable)? {
        outputs.value(at: steps.count - 1)
    }
}

/// The outputs of the steps of one attempt, by place in the graph.
final class StepOutputs: Sendable {
    let attempt: Int
    private let values = Locked<[(any Sendable)?]>([])

    init(attempt: Int) {
        self.attempt = attempt
    }

    func value(at index: Int) -> (any Sendable)? {
        values.withLock { index < $0.count ? $0[index] : nil }
    }

    func store(_ value: any Sendable, at index: Int) {
        values.withLock { values in
            if index >= values.count { values.append(contentsOf: repeatElement(nil, count: index + 1 - values.count)) }
            values[index] = value
        }
    }
}

/// Runs one ``JobStep`` of a ``JobDefinition``'s graph: a synchronous body on a pool thread, an `async`
/// one in a task, or nothing when an earlier try of the attempt already produced the step's output.
final class StepOperation: QueueOperation, @unchecked Sendable {
    private let step: AnyJobStep?
    private let index: Int
    /// The graph's bookkeeping; nil for a definition of one step, which has no outputs to keep or read.
    let build: StepBuild?
    /// The definition whose step this is, for its name (``JobContext/jobName``), read only when asked for.
    let definition: (any JobDefinition.Type)?
    /// The task of an `async` body (nil for a synchronous one).
    private let task: Locked<Task<Void, Never>?>?

    init(step: AnyJobStep, index: Int, build: StepBuild?, definition: any JobDefinition.Type) {
        self.step = step
        self.index = index
        self.build = build
        self.definition = definition
        if case .async = step.body { task = Locked(nil) } else { task = nil }
        super.init(
            queue: step.queue,
            resourceIdentifier: index < Self.placeNames.count ? Self.placeNames[index] : "step \(index)")
    }

    /// The resource identifiers of the first places ("step 0", …), made once.
    private static let placeNames = (0..<16).map { "step \($0)" }

    /// Not used: steps are made by the definition's manager.
    required init(queue: String, resourceIdentifier: String? = nil) {
        self.step = nil
        self.index = 0
        self.build = nil
        self.definition = nil
        self.task = nil
        super.init(queue: queue, resourceIdentifier: resourceIdentifier)
    }

    /// A task's body or a known output starts at once; a synchronous body needs a pool thread.
    override var executesInline: Bool {
        guard let step else { return true }
        if let build, build.outputs.value(at: index) != nil { return true }
        if case .async = step.body { return true }
        return false
    }

    override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        guard let step else {
            return completion(.failure(JobError.invalidOperation("a step operation made without a step")))
        }
        if let known = build?.outputs.value(at: index) { return completion(.success(known)) }
        let context = JobContext(operation: self, build: build, attempt: boundAttempt ?? 0)
        let index = index
        let build = build
        switch step.body {
        case .sync(let body):
            do {
                let value = try body(context)
                build?.outputs.store(value, at: index)
                completion(.success(value))
            } catch {
                completion(.failure(error))
            }
        case .async(let body):
            let work = Task {
                do {
                    let value = try await body(context)
                    build?.outputs.store(value, at: index)
                    completion(.success(value))
                } catch {
                    completion(.failure(error))
                }
            }
            task?.withLock { $0 = work }
            if isCancelled { work.cancel() }
        }
    }

    override func operationDidCancel() {
        task?.withLock { $0 }?.cancel()
    }
}
