import Dispatch

/// The class-layer job that runs a ``JobDefinition``: what ``JobHandle/job`` is.
final class DefinitionJob<Definition: JobDefinition>: Job, @unchecked Sendable {
    let definition: Definition

    init(_ definition: Definition, tag: Int, callbackQueue: DispatchQueue) {
        self.definition = definition
        super.init(
            tag: tag, callbackQueue: callbackQueue, retryPolicy: definition.retryPolicy,
            deadline: definition.deadline)
    }

    override class var managerClass: JobManager.Type { DefinitionManager<Definition>.self }

    override var name: String { Definition.name }
}

/// Builds a definition's graph: one ``StepOperation`` per ``JobStep``, wired as the steps wait for each
/// other. The job's result is the final step's output.
final class DefinitionManager<Definition: JobDefinition>: JobManager, @unchecked Sendable {
    private let definition: Definition?
    /// The outputs of the current attempt's steps, and the final step's place.
    private let current = Locked<(outputs: StepOutputs, final: Int)?>(nil)

    required init(job: Job) {
        definition = (job as? DefinitionJob<Definition>)?.definition
        super.init(job: job)
    }

    override func makeOperations() -> [QueueOperation] {
        guard let definition else {
            let refuse = TaskOperation<Void>(queue: "yxqueue.invalid") { _ in
                throw JobError.invalidOperation("\(Definition.self)'s manager runs a job that is not its definition's")
            }
            return [refuse]
        }
        let work = definition.work
        let steps = Self.stepsInOrder(endingWith: work.final)
        var indices: [ObjectIdentifier: Int] = [:]
        for (index, step) in steps.enumerated() { indices[ObjectIdentifier(step)] = index }
        let attempt = job.attempt
        let outputs = current.withLock { c -> StepOutputs in
            // A retry within the attempt keeps the outputs of the steps that succeeded.
            if let kept = c?.outputs, kept.attempt == attempt { return kept }
            return StepOutputs(attempt: attempt)
        }
        let finalIndex = indices[ObjectIdentifier(work.final)] ?? steps.count - 1
        current.withLock { $0 = (outputs, finalIndex) }
        let build = StepBuild(indices: indices, outputs: outputs)
        let operations = steps.enumerated().map { index, step in
            StepOperation(step: step, index: index, build: build, jobName: Definition.name)
        }
        for (index, step) in steps.enumerated() {
            for prerequisite in step.prerequisites {
                if let other = indices[ObjectIdentifier(prerequisite)] { operations[index].addPrerequisite(operations[other]) }
            }
        }
        return operations
    }

    override func makeResult(finishedOperations: [QueueOperation]) -> (any Sendable)? {
        guard let (outputs, final) = current.withLock({ $0 }) else { return nil }
        return outputs.value(at: final)
    }

    /// Every step `final` waits for, directly or not, prerequisites before dependents, each once.
    private static func stepsInOrder(endingWith final: AnyJobStep) -> [AnyJobStep] {
        var order: [AnyJobStep] = []
        var seen: Set<ObjectIdentifier> = []
        // Iterative depth-first walk: (step, whether its prerequisites were pushed).
        var stack: [(AnyJobStep, Bool)] = [(final, false)]
        while let (step, expanded) = stack.popLast() {
            let id = ObjectIdentifier(step)
            if expanded {
                if seen.insert(id).inserted { order.append(step) }
                continue
            }
            if seen.contains(id) { continue }
            stack.append((step, true))
            for prerequisite in step.prerequisites.reversed() where !seen.contains(ObjectIdentifier(prerequisite)) {
                stack.append((prerequisite, false))
            }
        }
        return order
    }
}
