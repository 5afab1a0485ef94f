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

    override class var managerClass: JobManager.Type { DefinitionManager.self }

    override var name: String { Definition.name }

    override func definitionWork() -> DefinitionWork? {
        DefinitionWork(final: definition.work.final, definition: Definition.self)
    }
}

/// What an attempt of a ``JobDefinition`` runs: the step its result comes from (which names the steps it
/// waits for), and the definition's type, for the name its steps' contexts give.
struct DefinitionWork {
    let final: AnyJobStep
    let definition: any JobDefinition.Type
}

/// Builds a definition's graph: one ``StepOperation`` per ``JobStep``, wired as the steps wait for each
/// other. The job's result is the final step's output.
///
/// Not generic: the work comes from the job (``Job/definitionWork()``). A generic manager's class was
/// looked up in the runtime's cache of generic types for every job (about 330 instructions).
final class DefinitionManager: JobManager, @unchecked Sendable {
    // The outputs of a graph's steps live in its operations' `StepBuild`, not here: a definition of one
    // step (most of them) has none, and this manager then keeps no state of its own (no lock to make).

    /// No `operationDidFinish` override: the graph's next step is taken as an operation ends.
    override var hasOperationDidFinishHook: Bool { false }

    /// A graph of one operation is a definition of one body, built without a ``StepBuild``: the job's
    /// result is that operation's (see ``makeResult(of:)``).
    override var resultOfOneOperationIsItsOwn: Bool { true }

    override func makeOperations() -> [QueueOperation] {
        switch makeAttemptOperations() {
        case .one(let operation): [operation]
        case .many(let operations): operations
        }
    }

    override func makeAttemptOperations() -> AttemptOperations {
        // Only a `DefinitionJob` names this manager (its ``Job/managerClass``), and it always has work;
        // an operation without a step would fail the job as an invalid operation.
        guard let work = job.definitionWork() else { return .one(StepOperation(queue: job.queue)) }
        // Most definitions are one body (`.run(on:)`): one operation, whose result is the job's. No
        // outputs to keep for a retry (the step's success is the job's end) and none to read (it waits
        // for nothing), so none of the graph's bookkeeping.
        if work.final.prerequisites.isEmpty {
            return .one(StepOperation(step: work.final, index: 0, build: nil, definition: work.definition))
        }
        return .many(makeGraphOperations(work))
    }

    /// The operations of a definition of several steps, each waiting for its prerequisites.
    private func makeGraphOperations(_ work: DefinitionWork) -> [QueueOperation] {
        let steps = Self.stepsInOrder(endingWith: work.final)
        let attempt = job.attempt
        // A retry within the attempt keeps the outputs of the steps that succeeded: they are in the build
        // of the operations this set replaces, which the graph still holds.
        let previous = (firstOperation as? StepOperation)?.build?.outputs
        let outputs = previous.flatMap { $0.attempt == attempt ? $0 : nil } ?? StepOutputs(attempt: attempt)
        let build = StepBuild(steps: steps, outputs: outputs)
        let operations = steps.enumerated().map { index, step in
            StepOperation(step: step, index: index, build: build, definition: work.definition)
        }
        for (index, step) in steps.enumerated() {
            for prerequisite in step.prerequisites {
                if let other = build.index(of: prerequisite) { operations[index].addPrerequisite(operations[other]) }
            }
        }
        return operations
    }

    override func makeResult(finishedOperations: [QueueOperation]) -> (any Sendable)? {
        makeResult(of: .many(finishedOperations))
    }

    override func makeResult(of finished: AttemptOperations) -> (any Sendable)? {
        // The final step's output; one step (no build): its own result.
        guard let build = (finished.first as? StepOperation)?.build else { return finished.last?.result }
        return build.finalOutput
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
