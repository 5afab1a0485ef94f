import Dispatch
import Foundation
import XCTest

@_spi(YXQueueInternals) @testable import YXQueue

final class SchedulingTests: XCTestCase {
    /// Asynchronous operations keep their slot until they complete, and the queue starts the next one
    /// as soon as one completes (the Linux OperationQueue trap DESIGN.md describes).
    func testNextOperationStartsWhenAnAsynchronousOneCompletes() async throws {
        let dispatcher = Dispatcher(name: "async-slot")
        let model = "serial"
        dispatcher.setLimit(1, for: model)
        let order = Log<String>()
        let jobs = (0..<3).map { index in
            ClosureJob(tag: index, queue: model) { _ in
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
        let probe = ConcurrencyProbe()
        let limits = ["alpha": 2, "beta": 3, "gamma": 1]
        let dispatcher = Dispatcher(name: "limits", queues: limits)
        var jobs: [Job] = []
        for type in limits.keys {
            let model = type
            let limit = limits[type]!
            for index in 0..<12 {
                jobs.append(
                    ClosureJob(tag: index, queue: model) { _ in
                        probe.enter(type)
                        // The first bodies stay until their type's limit was reached and types overlapped
                        // (or 5 s passed): whether they do then does not depend on how fast a loaded
                        // machine starts tasks.
                        let deadline = ContinuousClock.now + .seconds(5)
                        while !(probe.peak(type) == limit && probe.peakTotal > 3) && ContinuousClock.now < deadline {
                            try await Task.sleep(nanoseconds: 1_000_000)
                        }
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
        XCTAssertTrue(jobs.allSatisfy { $0.state == .finished })
        XCTAssertEqual(Set(dispatcher.queueNames), Set(limits.keys))
        XCTAssertEqual(dispatcher.limit(for: "beta"), 3)
        XCTAssertEqual(dispatcher.limit(for: "never-configured"), dispatcher.defaultLimit)
    }

    /// `pauseAll`, `resumeAll` and `setLimit` from two threads at once leave every queue as the
    /// dispatcher says. (Each queue took the setting after the dispatcher's lock was let go: a pause
    /// could reach the queues after a later resume, and they stayed paused while `isPaused` said no.)
    func testPausesAndLimitsFromTwoThreadsLeaveEveryQueueAsTheDispatcherSays() {
        let dispatcher = Dispatcher(name: "toggles")
        let names = ["a", "b", "c", "d"]
        let queues = names.map { dispatcher.workQueue(named: $0) }
        var mismatches: [String] = []
        for round in 0..<2_000 {
            DispatchQueue.concurrentPerform(iterations: 2) { side in
                if side == 0 { dispatcher.pauseAll() } else { dispatcher.resumeAll() }
                dispatcher.setLimit(side == 0 ? 1 : 8, for: "a")
            }
            let paused = dispatcher.isPaused
            for queue in queues where queue.isPaused != paused {
                mismatches.append("round \(round): queue \(queue.name) paused \(queue.isPaused), dispatcher \(paused)")
            }
            if queues[0].limit != dispatcher.limit(for: "a") {
                mismatches.append("round \(round): limit \(queues[0].limit), dispatcher \(dispatcher.limit(for: "a"))")
            }
            if mismatches.count > 5 { break }
        }
        XCTAssertEqual(mismatches, [])
    }

    func testGraphRunsInDependencyOrderWithAggregatedProgress() async throws {
        let dispatcher = Dispatcher(name: "graph")
        let order = Log<String>()
        let model = "graph"
        dispatcher.setLimit(4, for: model)
        let bothRunning = Gate()
        let running = Locked(0)
        @Sendable func step(_ name: String, parallel: Bool = false) -> AnyTaskOperation {
            AnyTaskOperation(queue: model, resourceIdentifier: name) { op in
                order.append("start \(name)")
                if parallel {
                    // B and C must be able to run at the same time.
                    if running.withLock({ $0 += 1; return $0 }) == 2 { bothRunning.open() }
                    guard await bothRunning.opened() else { throw TestFailure(code: -1) }
                }
                op.reportProgress(0.5)
                try await Task.sleep(nanoseconds: 120_000_000)
                order.append("end \(name)")
                return name
            }
        }
        let job = TestGraphJob {
            let a = step("A")
            let b = step("B", parallel: true)
            let c = step("C", parallel: true)
            let d = step("D")
            b.addPrerequisite(a)
            c.addPrerequisite(a)
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
        let model = "fail-graph"
        dispatcher.setLimit(4, for: model)
        let job = TestGraphJob {
            let a = AnyTaskOperation(queue: model) { _ in ran.append("A"); throw TestFailure(code: 1) }
            let b = AnyTaskOperation(queue: model) { _ in ran.append("B"); return nil }
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
        XCTAssertEqual(job.state, .failed)
    }

    func testCycleAndForeignPrerequisiteFailTheJob() async throws {
        let dispatcher = Dispatcher(name: "cycle")
        let model = "cycle"
        let cyclic = TestGraphJob {
            let a = AnyTaskOperation(queue: model) { _ in nil }
            let b = AnyTaskOperation(queue: model) { _ in nil }
            a.addPrerequisite(b)
            b.addPrerequisite(a)
            return [a, b]
        }
        let foreign = TestGraphJob {
            let outsider = AnyTaskOperation(queue: model) { _ in nil }
            let a = AnyTaskOperation(queue: model) { _ in nil }
            a.addPrerequisite(outsider)
            return [a]
        }
        for job in [cyclic, foreign] {
            dispatcher.add(job)
            await assertFailsAsAnInvalidGraph(job)
        }
    }

    private func assertFailsAsAnInvalidGraph(_ job: Job, line: UInt = #line) async {
        do {
            _ = try await job.value
            XCTFail("expected an invalid graph", line: line)
        } catch let error as JobError {
            guard case .invalidOperationGraph = error else { return XCTFail("\(error)", line: line) }
        } catch {
            XCTFail("\(error)", line: line)
        }
    }

    /// A graph found invalid ends its job, and the job then lets go of every operation, the ready ones
    /// found before the invalid one included (an operation bound to a job holds it until it finished or
    /// its attempt ended).
    func testAnInvalidGraphLetsGoOfItsOperationsAndItsJob() async throws {
        let dispatcher = Dispatcher(name: "invalid-release")
        weak var weakJob: Job?
        weak var weakReady: QueueOperation?
        do {
            let job = TestGraphJob {
                let ready = AnyTaskOperation(queue: "invalid-release") { _ in nil }
                let outsider = AnyTaskOperation(queue: "invalid-release") { _ in nil }
                let waiting = AnyTaskOperation(queue: "invalid-release") { _ in nil }
                waiting.addPrerequisite(outsider)
                return [ready, waiting]
            }
            weakJob = job
            dispatcher.add(job)
            await assertFailsAsAnInvalidGraph(job)
            await dispatcher.waitForAllJobs()
            weakReady = job.manager?.operations.first
            XCTAssertNotNil(weakReady)
            XCTAssertEqual(weakReady?.isFinished, false, "the ready operation never ran")
        }
        XCTAssertNil(weakJob, "the job's operations still hold it")
        XCTAssertNil(weakReady)
    }

    /// The manager shares its job's state (the graph lives there): neither keeps the other, and both go,
    /// with their operations, when the last owner of the job lets go.
    func testAJobGoesWithItsManagerAndOperations() async throws {
        let dispatcher = Dispatcher(name: "job-release")
        weak var weakJob: Job?
        weak var weakManager: JobManager?
        weak var weakOperation: QueueOperation?
        weak var weakGraphJob: Job?
        weak var weakGraphManager: JobManager?
        do {
            let job = ClosureJob { _ in 1 }
            let graphJob = TestGraphJob {
                let first = AnyTaskOperation(queue: "job-release") { _ in nil }
                let second = AnyTaskOperation(queue: "job-release") { _ in nil }
                second.addPrerequisite(first)
                return [first, second]
            }
            dispatcher.add(job)
            dispatcher.add(graphJob)
            await dispatcher.waitForAllJobs()
            XCTAssertEqual(job.state, .finished)
            XCTAssertEqual(graphJob.state, .finished)
            weakJob = job
            weakManager = job.manager
            weakOperation = job.manager?.operations.first
            weakGraphJob = graphJob
            weakGraphManager = graphJob.manager
            XCTAssertNotNil(weakManager)
            XCTAssertNotNil(weakOperation)
            XCTAssertNotNil(weakGraphManager)
        }
        await eventually { weakJob == nil && weakGraphJob == nil }
        XCTAssertNil(weakJob)
        XCTAssertNil(weakManager, "the job's state keeps its manager")
        XCTAssertNil(weakOperation)
        XCTAssertNil(weakGraphJob)
        XCTAssertNil(weakGraphManager, "the job's state keeps its manager")
    }

    /// A manager's `operationDidFinish` sees the operation still bound to its job and not yet finished,
    /// and a new progress weight set there still counts.
    func testOperationDidFinishSeesTheOperationBoundToItsJob() async throws {
        final class Seen: @unchecked Sendable {
            let lock = NSLock()
            var values: [String] = []
            func add(_ value: String) { lock.withLock { values.append(value) } }
        }
        final class WatchingManager: JobManager, @unchecked Sendable {
            static let seen = Seen()
            override func makeOperations() -> [QueueOperation] {
                let first = AnyTaskOperation(queue: "watching") { _ in "first" }
                let second = AnyTaskOperation(queue: "watching") { _ in "second" }
                second.addPrerequisite(first)
                return [first, second]
            }
            override func operationDidFinish(_ operation: QueueOperation) {
                Self.seen.add("job: \(operation.job === job), manager: \(operation.manager === self), "
                    + "finished: \(operation.isFinished), result: \(operation.result as? String ?? "none")")
            }
        }
        final class WatchingJob: Job, @unchecked Sendable {
            override class var managerClass: JobManager.Type { WatchingManager.self }
        }
        let dispatcher = Dispatcher(name: "watching")
        let job = WatchingJob()
        dispatcher.add(job)
        let result = try await job.value
        XCTAssertEqual(result as? String, "second")
        XCTAssertEqual(WatchingManager.seen.values, [
            "job: true, manager: true, finished: false, result: first",
            "job: true, manager: true, finished: false, result: second",
        ])
    }

    func testManagerCanGrowTheGraphWhenAnOperationFinishes() async throws {
        final class ProbeThenPartsManager: JobManager, @unchecked Sendable {
            let model = "parts"
            let finalize = Locked<AnyTaskOperation?>(nil)
            let seen = Log<String>()
            override func makeOperations() -> [QueueOperation] {
                let probe = AnyTaskOperation(queue: model, resourceIdentifier: "probe") { _ in 4 }
                let seen = self.seen
                let finalize = AnyTaskOperation(queue: model, resourceIdentifier: "finalize") { _ in
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
                    AnyTaskOperation(queue: model, resourceIdentifier: "part") { _ in
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
            override class var managerClass: JobManager.Type { ProbeThenPartsManager.self }
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
        XCTAssertTrue(jobs.allSatisfy { $0.state == .finished })
    }

    func testTwoDispatchersShareNoQueuesOrState() async throws {
        let model = "same-type"
        let first = Dispatcher(name: "first", queues: [model: 1])
        let second = Dispatcher(name: "second", queues: [model: 1])
        first.pauseAll()
        let gate = Gate()
        let held = ClosureJob(queue: model) { _ in nil }
        let running = ClosureJob(queue: model) { _ in
            gate.open()
            return "second"
        }
        first.add(held)
        second.add(running)
        await assertOpens(gate, "pausing one dispatcher does not hold the other")
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

    func testAJobRestartedWhileItsEndIsStillQueuedCountsOnceOnEachDispatcher() async throws {
        let first = Dispatcher(name: "registry.first")
        let second = Dispatcher(name: "registry.second")
        let callbacks = DispatchQueue(label: "test.registry")
        let runs = Locked(0)
        let job = ClosureJob(callbackQueue: callbacks) { _ in
            if runs.withLock({ $0 += 1; return $0 }) < 3 { throw TestFailure(code: 5) }
            return nil
        }
        // An observer, so that each end is mail for the held callback queue: the dispatcher keeps counting
        // the attempt until its terminal callback was delivered.
        let token = job.observe(.terminal) { _, _ in }
        callbacks.suspend()
        first.add(job)
        await eventually { job.state == .failed }
        XCTAssertTrue(first.add(job), "a second attempt on the same dispatcher, the first one's end still queued")
        await eventually { job.state == .failed && job.attempt == 2 }
        XCTAssertEqual(first.activeJobCount, 1)
        XCTAssertEqual(first.activeJobs.count, 1)
        XCTAssertNotNil(first.manager(for: job))
        XCTAssertTrue(second.add(job), "a third attempt, on another dispatcher")
        await eventually { job.state == .finished }
        XCTAssertEqual(first.activeJobCount, 1, "the first dispatcher counts the job until its ends are delivered")
        XCTAssertNotNil(first.manager(for: job))
        XCTAssertEqual(second.activeJobCount, 1)
        XCTAssertNotNil(second.manager(for: job))
        callbacks.resume()
        await first.waitForAllJobs()
        await second.waitForAllJobs()
        XCTAssertEqual(first.activeJobCount, 0)
        XCTAssertEqual(second.activeJobCount, 0)
        XCTAssertTrue(first.activeJobs.isEmpty)
        XCTAssertNil(first.manager(for: job))
        XCTAssertNil(second.manager(for: job))
        // The places the job held are taken again by the next jobs.
        let next = (0..<3).map { _ in ClosureJob(callbackQueue: callbacks) { _ in nil } }
        first.pauseAll()
        for job in next { first.add(job) }
        XCTAssertEqual(first.activeJobCount, 3)
        XCTAssertEqual(Set(first.activeJobs.map(ObjectIdentifier.init)), Set(next.map(ObjectIdentifier.init)))
        first.resumeAll()
        await first.waitForAllJobs()
        XCTAssertEqual(first.activeJobCount, 0)
        withExtendedLifetime(token) {}
    }

    /// Twelve queues (more than the dispatcher finds without its lock), made by jobs started from many
    /// threads at once: each keeps its own limit of one, and every job runs.
    func testManyQueuesMadeFromManyThreadsEachKeepTheirLimit() async throws {
        let dispatcher = Dispatcher(name: "many-queues", defaultLimit: 1)
        let running = Locked([String: Int]())
        let overlaps = Locked(0)
        let ran = Locked(0)
        let jobs = (0..<240).map { index in
            ClosureJob(queue: "queue-\(index % 12)") { operation in
                let name = operation.queue
                let together = running.withLock { $0[name, default: 0] += 1; return $0[name]! }
                if together > 1 { overlaps.withLock { $0 += 1 } }
                try await Task.sleep(nanoseconds: 200_000)
                running.withLock { $0[name, default: 0] -= 1 }
                ran.withLock { $0 += 1 }
                return nil
            }
        }
        DispatchQueue.concurrentPerform(iterations: 8) { part in
            for job in jobs[(part * 30)..<(part * 30 + 30)] { dispatcher.add(job) }
        }
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(ran.withLock { $0 }, 240)
        XCTAssertEqual(overlaps.withLock { $0 }, 0, "a queue ran two operations at once")
        XCTAssertEqual(Set(dispatcher.queueNames), Set((0..<12).map { "queue-\($0)" }))
        XCTAssertTrue(jobs.allSatisfy { $0.state == .finished })
    }

    func testSharedDispatcherAndBlockingWait() throws {
        let job = ClosureJob { _ in "shared" }
        XCTAssertTrue(job.start())
        XCTAssertTrue(job.dispatcher === Dispatcher.shared)
        Dispatcher.shared.waitUntilAllJobsAreFinished()
        XCTAssertEqual(job.state, .finished)
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
            override class var operationClass: QueueOperation.Type { EchoOperation.self }
            override var queue: String { "echo" }
        }
        let dispatcher = Dispatcher(name: "default-manager")
        let result = try await EchoJob(tag: 21).run(on: dispatcher)
        XCTAssertEqual(result as? Int, 42)
        XCTAssertEqual(dispatcher.queueNames, ["echo"])
    }

    /// A job of one operation whose manager class only overrides `makeResult` or only `makeOperations`:
    /// the overrides are called (the base class alone skips the arrays of one).
    func testAManagerSubclassOfOneOperationKeepsItsOverrides() async throws {
        final class EchoOperation: QueueOperation, @unchecked Sendable {
            override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
                completion(.success(job?.tag ?? -1))
            }
        }
        final class DescribingManager: JobManager, @unchecked Sendable {
            override func makeResult(finishedOperations: [QueueOperation]) -> (any Sendable)? {
                "\(finishedOperations.count) operation: \(finishedOperations.first?.result ?? "none")"
            }
        }
        final class DescribedJob: Job, @unchecked Sendable {
            override class var managerClass: JobManager.Type { DescribingManager.self }
            override class var operationClass: QueueOperation.Type { EchoOperation.self }
            override var queue: String { "echo" }
        }
        final class OtherQueueManager: JobManager, @unchecked Sendable {
            override func makeOperations() -> [QueueOperation] { [EchoOperation(queue: "other")] }
        }
        final class OtherQueueJob: Job, @unchecked Sendable {
            override class var managerClass: JobManager.Type { OtherQueueManager.self }
            override var queue: String { "echo" }
        }
        let dispatcher = Dispatcher(name: "one-operation-overrides")
        let described = try await DescribedJob(tag: 7).run(on: dispatcher)
        XCTAssertEqual(described as? String, "1 operation: 7")
        let other = try await OtherQueueJob(tag: 8).run(on: dispatcher)
        XCTAssertEqual(other as? Int, 8)
        XCTAssertEqual(dispatcher.queueNames.sorted(), ["echo", "other"])
    }
}
