import Foundation
import YXJobStore
@_spi(YXQueueInternals) import YXQueue

/// Stored `JobDefinition`s run by a worker through a YXQueue `Dispatcher`
/// (`JobRegistry.register(_:on:)`): the dispatcher's queue limits, graphs, retries within an attempt,
/// cancel and progress, with the store around them.
extension JobStoreConformance {
    /// Graphs of steps from the store run on a dispatcher whose "cpu" queue allows 2: two cpu steps run
    /// at once while others wait for a slot, never three; each job's typed output is its stored result.
    public func dispatcherRunsStoredGraphsUnderQueueLimits() async throws {
        try await withStore { store in
            let probe = BridgeProbe()
            defer { probe.retire() }
            let dispatcher = Dispatcher(name: "conformance", queues: [BridgeGraph.cpu: 2, BridgeGraph.io: 4])
            var registry = JobRegistry()
            registry.register(BridgeGraph.self, on: dispatcher)
            let numbers = Array(1...6)
            let ids = try await store.enqueue(numbers.map { BridgeGraph(probe: probe.id, number: $0) }).map(\.id)
            let worker = startWorker(store, registry)

            // Six jobs claimed at once, two cpu steps each: the queue's limit is reached and others wait.
            try await waitUntil("two cpu steps run and more wait for the queue") {
                let load = dispatcher.load(of: BridgeGraph.cpu)
                return probe.running == 2 && load.running == 2 && load.waiting >= 1
            }
            probe.gate.open()
            try await waitUntil("every graph succeeds") {
                try await states(store, ids).allSatisfy { $0 == .succeeded }
            }
            try await worker.stop()
            try expectEqual(probe.most, 2, "the most cpu steps at once (the dispatcher's limit)")
            try expectEqual(probe.calls, 2 * numbers.count, "cpu steps run")
            for (number, id) in zip(numbers, ids) {
                let output = try await record(store, id).decodedResult(as: BridgeGraph.Output.self)
                try expectEqual(
                    output, BridgeGraph.Output(number: number, doubled: 2 * number, squared: number * number),
                    "the stored result of job \(id)"
                )
            }
            try expectEqual(dispatcher.activeJobCount, 0, "jobs left on the dispatcher")
        }
    }

    /// Progress a step reports is read from another instance of the store (its own connections) while
    /// the job runs; a job whose output is not `Encodable` succeeds without a result.
    public func dispatcherProgressReadFromAnotherConnection() async throws {
        try await withStore { store in
            let probe = BridgeProbe()
            defer { probe.retire() }
            let dispatcher = Dispatcher(name: "conformance")
            var registry = JobRegistry()
            registry.register(BridgeHalfway.self, on: dispatcher)
            let id = try await store.enqueue(BridgeHalfway(probe: probe.id)).id
            let worker = startWorker(store, registry)
            let reader = try await harness.open()
            do {
                try await waitUntil("another connection reads the step's progress") {
                    let record = try await reader.job(id)
                    return record?.state == .running && record?.progress.fraction == 0.5
                }
                probe.gate.open()
                try await waitUntil("the job succeeds") { try await reader.job(id)?.state == .succeeded }
                let ended = try await record(reader, id)
                try expectEqual(ended.progress.fraction, 1, "the progress recorded with the outcome")
                try expectEqual(ended.result, nil, "the result of a job whose output is not Encodable")
                try await reader.close()
            } catch {
                try? await reader.close()
                throw error
            }
            try await worker.stop()
        }
    }

    /// A cancel recorded from another instance of the store cancels the definition running on the
    /// dispatcher: its waiting step sees the cancellation, the job ends on the dispatcher, and the store
    /// records it canceled.
    public func dispatcherCancelFromAnotherConnection() async throws {
        try await withStore { store in
            let probe = BridgeProbe()
            defer { probe.retire() }
            let dispatcher = Dispatcher(name: "conformance")
            var registry = JobRegistry()
            registry.register(BridgeEndless.self, on: dispatcher)
            let id = try await store.enqueue(BridgeEndless(probe: probe.id), options: JobOptions(retry: .never)).id
            let worker = startWorker(store, registry)
            try await waitUntil("the second step waits") { probe.running == 1 }
            let canceler = try await harness.open()
            let requested = ContinuousClock.now
            let result = try await canceler.cancel(id, reason: "canceled from another connection")
            try await canceler.close()
            try expectEqual(result, .requested, "cancel of the running job")
            try await waitUntil("the store records the cancel") { try await store.job(id)?.state == .canceled }
            let took = ContinuousClock.now - requested
            try expectEqual(probe.cancellations, 1, "steps that saw the cancellation")
            try expectEqual(probe.calls, 1, "steps after the first one that ran")
            try await waitUntil("the job ended on the dispatcher") { dispatcher.activeJobCount == 0 }
            try await worker.stop()
            // Within about a second by contract (cancel check every 100 ms here); this only catches a cancel
            // that waited for something else, such as the lease or the timeout.
            try expect(took < .seconds(30), "the cancel took \(took)")
            try expectEqual(try await record(store, id).attempt, 1, "attempts")
        }
    }

    /// A definition's own retry policy retries its failed step within an attempt; when the attempt
    /// still fails, the store's policy runs another attempt, whose step succeeds.
    public func dispatcherRetriesWithinAndAcrossAttempts() async throws {
        try await withStore { store in
            let probe = BridgeProbe()
            defer { probe.retire() }
            let dispatcher = Dispatcher(name: "conformance")
            var registry = JobRegistry()
            registry.register(BridgeFlaky.self, on: dispatcher)
            let options = JobOptions(retry: RetryPolicy(retries: 1, initialDelay: 0.05, jitter: 0, scope: .allErrors))
            let id = try await store.enqueue(BridgeFlaky(probe: probe.id, succeedOnCall: 3), options: options).id
            let worker = startWorker(store, registry)
            try await waitUntil("the flaky job ends") { try await store.job(id)?.state.isTerminal == true }
            try await worker.stop()
            let record = try await record(store, id)
            try expectEqual(record.state, .succeeded, "the flaky job's state (\(record.message ?? ""))")
            try expectEqual(probe.calls, 3, "tries of the step: two in the first attempt, one in the second")
            try expectEqual(record.attempt, 2, "attempts")
            try expectEqual(record.failures, 1, "failed attempts")
            try expectEqual(try record.decodedResult(as: Int.self), 3, "the stored result")
        }
    }

    /// A stored definition whose payload no longer decodes as its type ends `discarded` with the
    /// decoder's reason, and the worker goes on with the next job.
    public func dispatcherDiscardsUndecodableDefinitions() async throws {
        try await withStore { store in
            let probe = BridgeProbe()
            defer { probe.retire() }
            probe.gate.open()
            let dispatcher = Dispatcher(name: "conformance")
            var registry = JobRegistry()
            registry.register(BridgeGraph.self, on: dispatcher)
            // An older version of the type stored `value` where the current one has `number`.
            let old = try await store.enqueue(
                JobRequest(name: BridgeGraph.name, payload: Data(#"{"probe":"\#(probe.id)","value":4}"#.utf8))
            ).id
            let good = try await store.enqueue(BridgeGraph(probe: probe.id, number: 4)).id
            let worker = startWorker(store, registry)
            try await waitUntil("both jobs end") {
                try await states(store, [old, good]).allSatisfy { $0?.isTerminal == true }
            }
            try await worker.stop()
            let discarded = try await record(store, old)
            try expectEqual(discarded.state, .discarded, "the undecodable job's state")
            try expect(
                discarded.message?.contains("do not decode") == true,
                "the reason names the decoding: \(discarded.message ?? "")"
            )
            try expectEqual(discarded.attempt, 1, "attempts of the discarded job (no retry)")
            try expectEqual(try await record(store, good).state, .succeeded, "the next job")
        }
    }
}

// MARK: - Definitions of the scenarios

/// What the definitions of a scenario share with the test: a gate, and counts of their steps. Found by
/// its identifier, which the definitions carry in their stored payload.
final class BridgeProbe: Sendable {
    private static let all = Locked<[String: BridgeProbe]>([:])

    let id = UUID().uuidString
    let gate = Gate()
    private let state = Locked((running: 0, most: 0, calls: 0, cancellations: 0))

    init() {
        Self.all.withLock { $0[id] = self }
    }

    static func named(_ id: String) throws -> BridgeProbe {
        guard let probe = all.withLock({ $0[id] }) else { throw ConformanceError("no probe \(id)") }
        return probe
    }

    func retire() {
        gate.open()
        _ = Self.all.withLock { $0.removeValue(forKey: id) }
    }

    var running: Int { state.withLock { $0.running } }
    var most: Int { state.withLock { $0.most } }
    var calls: Int { state.withLock { $0.calls } }
    var cancellations: Int { state.withLock { $0.cancellations } }

    /// Counts a step while `body` runs, after the gate opened.
    func step<T>(_ body: () async throws -> T) async rethrows -> T {
        state.withLock { state in
            state.running += 1
            state.calls += 1
            state.most = max(state.most, state.running)
        }
        defer { state.withLock { $0.running -= 1 } }
        await gate.wait()
        return try await body()
    }

    /// Counts a call.
    func call() -> Int {
        state.withLock { state in
            state.calls += 1
            return state.calls
        }
    }

    /// Waits until the task is cancelled, counted as a running step.
    func waitForCancellation() async throws {
        state.withLock { state in
            state.running += 1
            state.calls += 1
        }
        defer { state.withLock { $0.running -= 1 } }
        do {
            while true { try await Task.sleep(for: .seconds(3600)) }
        } catch {
            state.withLock { $0.cancellations += 1 }
            throw error
        }
    }
}

/// A graph: read on "io", two steps on "cpu" side by side, a last one on "io".
struct BridgeGraph: JobDefinition, Codable {
    static let name = "conformance.dispatcher.graph"
    static let cpu = "conformance.cpu"
    static let io = "conformance.io"

    struct Output: Codable, Sendable, Equatable, CustomStringConvertible {
        var number: Int
        var doubled: Int
        var squared: Int

        var description: String { "(\(number), \(doubled), \(squared))" }
    }

    let probe: String
    let number: Int

    var work: JobWork<Output> {
        let probe = probe
        let number = number
        let read = JobStep(on: Self.io) { _ in number }
        let doubled = JobStep(on: Self.cpu, after: read) { value, _ in
            try await BridgeProbe.named(probe).step { value * 2 }
        }
        let squared = JobStep(on: Self.cpu, after: read) { value, _ in
            try await BridgeProbe.named(probe).step { value * value }
        }
        let output = JobStep(on: Self.io, after: doubled, squared) { doubled, squared, _ in
            Output(number: number, doubled: doubled, squared: squared)
        }
        return JobWork(output)
    }
}

/// Reports half its progress, then waits for the gate. No Encodable output.
struct BridgeHalfway: JobDefinition, Codable {
    static let name = "conformance.dispatcher.halfway"
    let probe: String

    var work: JobWork<Void> {
        let probe = probe
        return .run(on: "conformance.io") { context in
            context.reportProgress(0.5)
            try await BridgeProbe.named(probe).step {}
        }
    }
}

/// A first step, then one that runs until canceled.
struct BridgeEndless: JobDefinition, Codable {
    static let name = "conformance.dispatcher.endless"
    let probe: String

    var work: JobWork<Void> {
        let probe = probe
        let first = JobStep(on: "conformance.io") { _ in probe }
        let endless = JobStep(on: "conformance.cpu", after: first) { probe, _ in
            try await BridgeProbe.named(probe).waitForCancellation()
        }
        return JobWork(endless)
    }
}

/// Fails with a transient error until its step's `succeedOnCall`-th call; retried once within an attempt.
struct BridgeFlaky: JobDefinition, Codable {
    static let name = "conformance.dispatcher.flaky"
    let probe: String
    let succeedOnCall: Int

    struct Busy: TransientError {
        var isTransient: Bool { true }
    }

    var retryPolicy: RetryPolicy { RetryPolicy(retries: 1, initialDelay: 0.01, jitter: 0) }

    var work: JobWork<Int> {
        let probe = probe
        let succeedOnCall = succeedOnCall
        return .run(on: "conformance.io") { _ in
            let call = try BridgeProbe.named(probe).call()
            guard call >= succeedOnCall else { throw Busy() }
            return call
        }
    }
}
