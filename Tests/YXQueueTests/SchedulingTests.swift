import Dispatch
import Foundation
import XCTest

@testable import YXQueue

final class SchedulingTests: XCTestCase {
    /// Asynchronous operations keep their slot until they complete, and the queue starts the next one
    /// as soon as one completes (the Linux OperationQueue trap DESIGN.md describes).
    func testNextOperationStartsWhenAnAsynchronousOneCompletes() async throws {
        let dispatcher = Dispatcher(name: "async-slot")
        let model = OperationModel(type: "serial", maxConcurrentOperationCount: 1)
        let order = Log<String>()
        let jobs = (0..<3).map { index in
            ClosureJob(tag: index, model: model) { _ in
                order.append("begin \(index)")
                // Completes later from another thread, with no thread blocked meanwhile.
                try await Task.sleep(nanoseconds: 20_000_000)
                order.append("end \(index)")
                return nil
            }
        }
        for job in jobs { dispatcher.add(job) }
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(order.all, ["begin 0", "end 0", "begin 1", "end 1", "begin 2", "end 2"])
    }

    func testPerTypeLimitsHoldAndTypesRunSideBySide() async throws {
        let dispatcher = Dispatcher(name: "limits")
        let probe = ConcurrencyProbe()
        let limits = ["alpha": 2, "beta": 3, "gamma": 1]
        var jobs: [Job] = []
        for (type, limit) in limits {
            let model = OperationModel(type: type, maxConcurrentOperationCount: limit)
            for index in 0..<12 {
                jobs.append(
                    ClosureJob(tag: index, model: model) { _ in
                        probe.enter(type)
                        try await Task.sleep(nanoseconds: 3_000_000)
                        probe.leave(type)
                        return nil
                    })
            }
        }
        for job in jobs.shuffled() { dispatcher.add(job) }
        await dispatcher.waitForAllJobs()
        for (type, limit) in limits {
            XCTAssertLessThanOrEqual(probe.peak(type), limit, "\(type) exceeded its limit")
            XCTAssertGreaterThanOrEqual(probe.peak(type), 1)
        }
        XCTAssertEqual(probe.peak("beta"), 3, "a limit of 3 is used in full")
        XCTAssertGreaterThan(probe.peakTotal, 3, "different types run side by side")
        XCTAssertTrue(jobs.allSatisfy { $0.state == .finishedSuccess })
        XCTAssertEqual(Set(dispatcher.operationTypes), Set(limits.keys))
        XCTAssertEqual(dispatcher.queue(for: OperationModel(type: "beta")).maxConcurrentOperationCount, 3)
    }

    func testGraphRunsInDependencyOrderWithAggregatedProgress() async throws {
        let dispatcher = Dispatcher(name: "graph")
        let order = Log<String>()
        let model = OperationModel(type: "graph", maxConcurrentOperationCount: 4)
        let bothRunning = Gate()
        let running = Locked(0)
        @Sendable func step(_ name: String, parallel: Bool = false) -> TaskOperation {
            TaskOperation(model: model, resourceIdentifier: name) { op in
                order.append("start \(name)")
                if parallel {
                    // B and C must be able to run at the same time.
                    if running.withLock({ $0 += 1; return $0 }) == 2 { bothRunning.open() }
                    XCTAssertTrue(bothRunning.wait(seconds: 5))
                }
                op.reportProgress(0.5)
                try await Task.sleep(nanoseconds: 120_000_000)
                order.append("end \(name)")
                return name
            }
        }
        let job = GraphJob {
            let a = step("A")
            let b = step("B", parallel: true)
            let c = step("C", parallel: true)
            let d = step("D")
            b.addPrerequisite(a)
            c.addDependency(a)  // redirected to addPrerequisite
            d.addPrerequisite(b)
            d.addPrerequisite(c)
            return [d, c, b, a]
        }
        let progress = Log<Double>()
        let token = job.onProgress { _, value in progress.append(value) }
        dispatcher.add(job)
        let result = try await job.value
        let log = order.all
        func index(_ entry: String) -> Int { log.firstIndex(of: entry) ?? -1 }
        XCTAssertLessThan(index("end A"), index("start B"))
        XCTAssertLessThan(index("end A"), index("start C"))
        XCTAssertLessThan(index("end B"), index("start D"))
        XCTAssertLessThan(index("end C"), index("start D"))
        XCTAssertEqual(result as? String, "D", "the default result is the last operation's")
        XCTAssertEqual(job.manager?.operations(withResourceIdentifier: "C").count, 1)
        await dispatcher.waitForAllJobs()
        let values = progress.all
        XCTAssertEqual(values, values.sorted(), "aggregated progress is monotonic")
        XCTAssertEqual(values.last, 1)
        XCTAssertTrue(values.contains { $0 > 0.1 && $0 < 0.9 }, "intermediate progress is aggregated: \(values)")
        _ = token
    }

    func testFailedOperationFailsTheJobAndDependentsNeverRun() async throws {
        let dispatcher = Dispatcher(name: "fail-graph")
        let ran = Log<String>()
        let model = OperationModel(type: "fail-graph", maxConcurrentOperationCount: 4)
        let job = GraphJob {
            let a = TaskOperation(model: model) { _ in ran.append("A"); throw TestFailure(code: 1) }
            let b = TaskOperation(model: model) { _ in ran.append("B"); return nil }
            b.addPrerequisite(a)
            return [a, b]
        }
        let recorder = Recorder()
        job.addDelegate(recorder)
        dispatcher.add(job)
        do {
            _ = try await job.value
            XCTFail("expected a failure")
        } catch {
            XCTAssertEqual(error as? TestFailure, TestFailure(code: 1))
        }
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(ran.all, ["A"])
        XCTAssertEqual(recorder.log(of: job), [.started, .failed])
        XCTAssertEqual(job.state, .finishedFailed)
    }

    func testCycleAndForeignPrerequisiteFailTheJob() async throws {
        let dispatcher = Dispatcher(name: "cycle")
        let model = OperationModel(type: "cycle")
        let cyclic = GraphJob {
            let a = TaskOperation(model: model) { _ in nil }
            let b = TaskOperation(model: model) { _ in nil }
            a.addPrerequisite(b)
            b.addPrerequisite(a)
            return [a, b]
        }
        let foreign = GraphJob {
            let outsider = TaskOperation(model: model) { _ in nil }
            let a = TaskOperation(model: model) { _ in nil }
            a.addPrerequisite(outsider)
            return [a]
        }
        for job in [cyclic, foreign] {
            dispatcher.add(job)
            do {
                _ = try await job.value
                XCTFail("expected an invalid graph")
            } catch let error as JobError {
                guard case .invalidOperationGraph = error else { return XCTFail("\(error)") }
            }
        }
    }

    func testManagerCanGrowTheGraphWhenAnOperationFinishes() async throws {
        final class ProbeThenPartsManager: JobManager, @unchecked Sendable {
            let model = OperationModel(type: "parts", maxConcurrentOperationCount: 8)
            let finalize = Locked<TaskOperation?>(nil)
            let seen = Log<String>()
            override func makeOperations() -> [QueueOperation] {
                let probe = TaskOperation(model: model, resourceIdentifier: "probe") { _ in 4 }
                let seen = self.seen
                let finalize = TaskOperation(model: model, resourceIdentifier: "finalize") { _ in
                    seen.append("finalize")
                    return "done"
                }
                finalize.addPrerequisite(probe)
                self.finalize.withLock { $0 = finalize }
                return [probe, finalize]
            }
            override func operationDidFinish(_ operation: QueueOperation) {
                guard operation.resourceIdentifier == "probe", let count = operation.result as? Int,
                    let finalize = finalize.withLock({ $0 })
                else { return }
                let seen = self.seen
                let parts = (0..<count).map { index in
                    TaskOperation(model: model, resourceIdentifier: "part") { _ in
                        try await Task.sleep(nanoseconds: 5_000_000)
                        seen.append("part \(index)")
                        return nil
                    }
                }
                for part in parts {
                    part.addPrerequisite(operation)
                    finalize.addPrerequisite(part)
                }
                addOperations(parts)
            }
        }
        final class PartsJob: Job, @unchecked Sendable {
            override class var managerType: JobManager.Type { ProbeThenPartsManager.self }
        }
        let dispatcher = Dispatcher(name: "grow")
        let job = PartsJob()
        let result = try await job.run(on: dispatcher)
        XCTAssertEqual(result as? String, "done")
        let manager = try XCTUnwrap(job.manager as? ProbeThenPartsManager)
        XCTAssertEqual(manager.seen.all.count, 5)
        XCTAssertEqual(manager.seen.all.last, "finalize")
        XCTAssertEqual(manager.operations(withResourceIdentifier: "part").count, 4)
    }

    func testPauseAllHoldsPendingWorkAndResumeAllReleasesIt() async throws {
        let dispatcher = Dispatcher(name: "pause")
        let started = Log<Int>()
        dispatcher.pauseAll()
        XCTAssertTrue(dispatcher.isPaused)
        let jobs = (0..<10).map { index in
            ClosureJob(tag: index) { _ in
                started.append(index)
                return nil
            }
        }
        for job in jobs { dispatcher.add(job) }
        try await Task.sleep(nanoseconds: 200_000_000)
        XCTAssertEqual(started.all, [], "nothing starts while paused")
        XCTAssertTrue(jobs.allSatisfy { $0.state == .ready })
        dispatcher.resumeAll()
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(Set(started.all), Set(0..<10))
        XCTAssertTrue(jobs.allSatisfy { $0.state == .finishedSuccess })
    }

    func testTwoDispatchersShareNoQueuesOrState() async throws {
        let first = Dispatcher(name: "first")
        let second = Dispatcher(name: "second")
        let model = OperationModel(type: "same-type", maxConcurrentOperationCount: 1)
        XCTAssertFalse(first.queue(for: model) === second.queue(for: model))
        first.pauseAll()
        let gate = Gate()
        let held = ClosureJob(model: model) { _ in nil }
        let running = ClosureJob(model: model) { _ in
            gate.open()
            return "second"
        }
        first.add(held)
        second.add(running)
        XCTAssertTrue(gate.wait(seconds: 5), "pausing one dispatcher does not hold the other")
        let result = try await running.value
        XCTAssertEqual(result as? String, "second")
        XCTAssertEqual(first.activeJobs.count, 1)
        XCTAssertNotNil(first.manager(for: held))
        XCTAssertNil(second.manager(for: held))
        second.cancelAll()
        XCTAssertEqual(held.state, .ready, "cancelAll on one dispatcher leaves the other's jobs alone")
        first.cancelAll()
        first.resumeAll()
        await first.waitForAllJobs()
        XCTAssertEqual(held.state, .canceled)
    }

    func testSharedDispatcherAndBlockingWait() throws {
        let job = ClosureJob { _ in "shared" }
        XCTAssertTrue(job.start())
        XCTAssertTrue(job.dispatcher === Dispatcher.shared)
        Dispatcher.shared.waitUntilAllJobsAreFinished()
        XCTAssertEqual(job.state, .finishedSuccess)
        XCTAssertEqual(job.result as? String, "shared")
        XCTAssertFalse(job.start(), "a finished job reports its result instead of running again")
    }

    func testDefaultManagerBuildsOneOperationOfTheJobsOperationType() async throws {
        final class EchoOperation: QueueOperation, @unchecked Sendable {
            override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
                let tag = job?.tag ?? -1
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.01) { completion(.success(tag * 2)) }
            }
        }
        final class EchoJob: Job, @unchecked Sendable {
            override class var operationType: QueueOperation.Type { EchoOperation.self }
            override var operationModel: OperationModel { OperationModel(type: "echo", maxConcurrentOperationCount: 2) }
        }
        let dispatcher = Dispatcher(name: "default-manager")
        let result = try await EchoJob(tag: 21).run(on: dispatcher)
        XCTAssertEqual(result as? Int, 42)
        XCTAssertEqual(dispatcher.operationTypes, ["echo"])
    }
}
