import Dispatch
import Foundation
import XCTest

@testable import YXQueue

/// Queues belong to the dispatcher: their limits are its configuration, set when it is made and
/// changed while it runs; operations only name their queue.
final class QueueLimitTests: XCTestCase {
    /// A job whose operation holds its slot until `release` opens.
    private func holdingJob(_ tag: Int, queue: String, probe: ConcurrencyProbe, release: Gate) -> ClosureJob {
        ClosureJob(tag: tag, queue: queue) { _ in
            probe.enter(queue)
            defer { probe.leave(queue) }
            guard await release.opened() else { throw TestFailure(code: -1) }
            return tag
        }
    }

    /// The rule for two kinds of jobs on one queue: there is nothing to disagree about. Neither job
    /// carries a limit; the queue has the dispatcher's.
    func testTwoKindsOfJobsOnOneQueueShareTheDispatchersLimit() async throws {
        final class KindA: Job, @unchecked Sendable {
            override var queue: String { "shared" }
        }
        final class KindB: Job, @unchecked Sendable {
            override var queue: String { "shared" }
        }
        let dispatcher = Dispatcher(name: "shared-queue", queues: ["shared": 3])
        let probe = ConcurrencyProbe()
        let release = Gate()
        let jobs = (0..<12).map { holdingJob($0, queue: "shared", probe: probe, release: release) }
        for job in jobs { dispatcher.add(job) }
        // A slot is taken before the operation's task enters the probe: wait for both.
        await eventually { dispatcher.load(of: "shared").running == 3 && probe.peak("shared") == 3 }
        XCTAssertEqual(dispatcher.load(of: "shared").waiting, 9)
        release.open()
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(probe.peak("shared"), 3)
        XCTAssertEqual(KindA().queue, KindB().queue)
        XCTAssertEqual(dispatcher.limit(for: "shared"), 3)
    }

    /// A dispatcher finds its first queues by comparing names and the others by hashing them: with more
    /// queues than the short list holds, and names that differ only at the end, each operation still
    /// takes a slot of its own queue under that queue's limit.
    func testManyQueuesEachKeepTheirOwnLimit() async throws {
        let names = (0..<12).map { "queue-with-a-long-name-\($0)" }
        let dispatcher = Dispatcher(
            name: "many-queues", queues: Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, $0 % 2 + 1) }))
        let probe = ConcurrencyProbe()
        let release = Gate()
        for (index, name) in names.enumerated() {
            for copy in 0..<3 { dispatcher.add(holdingJob(index * 10 + copy, queue: name, probe: probe, release: release)) }
        }
        for (index, name) in names.enumerated() {
            let limit = index % 2 + 1
            await eventually { dispatcher.load(of: name).running == limit && probe.peak(name) == limit }
            XCTAssertEqual(dispatcher.load(of: name).waiting, 3 - limit, name)
        }
        release.open()
        await dispatcher.waitForAllJobs()
        for (index, name) in names.enumerated() { XCTAssertEqual(probe.peak(name), index % 2 + 1, name) }
        XCTAssertEqual(Set(dispatcher.queueNames), Set(names))
    }

    /// An operation whose remaining work needs no slot gives it to the next one in line, and goes on:
    /// the queue's limit counts the operations that hold a slot, and the one that gave its slot away
    /// frees none when it ends.
    func testAnOperationThatReleasesItsSlotLetsTheNextStartAndFreesNoSlotWhenItEnds() async throws {
        let dispatcher = Dispatcher(name: "release", queues: ["q": 1])
        let probe = ConcurrencyProbe()
        let releaseFirst = Gate()
        let endFirst = Gate()
        let endOthers = Gate()
        let released = Log<Bool>()
        let first = ClosureJob(tag: 0, queue: "q") { operation in
            guard await releaseFirst.opened() else { throw TestFailure(code: -1) }
            released.append(operation.releaseSlot())
            released.append(operation.releaseSlot())  // once only
            guard await endFirst.opened() else { throw TestFailure(code: -2) }
            return 0
        }
        let others = (1...2).map { holdingJob($0, queue: "q", probe: probe, release: endOthers) }
        dispatcher.add(first)
        for job in others { dispatcher.add(job) }
        await eventually { first.state == .executing }
        XCTAssertEqual(dispatcher.load(of: "q").running, 1)
        XCTAssertEqual(dispatcher.load(of: "q").waiting, 2)
        XCTAssertEqual(probe.peak("q"), 0)

        releaseFirst.open()
        // The second job took the slot while the first goes on.
        await eventually { probe.peak("q") == 1 && released.all.count == 2 }
        XCTAssertEqual(released.all, [true, false])
        XCTAssertEqual(first.state, .executing)
        XCTAssertEqual(dispatcher.load(of: "q").running, 1)
        XCTAssertEqual(dispatcher.load(of: "q").waiting, 1)

        endFirst.open()
        let value = try await first.value
        XCTAssertEqual(value as? Int, 0)
        // Its end freed no slot: the third job still waits for the second.
        XCTAssertEqual(others[1].state, .ready)
        XCTAssertEqual(dispatcher.load(of: "q").running, 1)
        XCTAssertEqual(dispatcher.load(of: "q").waiting, 1)

        endOthers.open()
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(others.map(\.state), [.finished, .finished])
        XCTAssertEqual(probe.peak("q"), 1)
        XCTAssertEqual(dispatcher.load(of: "q").running, 0)
    }

    /// Outside its own work an operation has no slot to give.
    func testAnOperationThatDoesNotExecuteHasNoSlotToRelease() async throws {
        let dispatcher = Dispatcher(name: "release-idle", queues: ["q": 1])
        let operation = AnyTaskOperation(queue: "q") { _ in 1 }
        XCTAssertFalse(operation.releaseSlot())
        let job = TestGraphJob { [operation] }
        dispatcher.add(job)
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(job.state, .finished)
        XCTAssertFalse(operation.releaseSlot())
        // The job (no listener) unregisters on the thread that ends it, before that thread frees the
        // slot; the wait waits for the slot too.
        XCTAssertEqual(dispatcher.load(of: "q").running, 0)
    }

    /// Once its work has ended, an operation has no slot to give, even while a manager's
    /// `operationDidFinish` still sees it bound to its job: by then another thread may already have
    /// seen the job end (a TSan run once caught `releaseSlot()` answering true after the job's end: a
    /// job with no listener unregisters on the thread that ends it, inside the manager's call).
    func testAnOperationWhoseWorkEndedHasNoSlotToReleaseInItsManagersHook() async throws {
        final class ReleasingManager: JobManager, @unchecked Sendable {
            override func makeOperations() -> [QueueOperation] {
                [AnyTaskOperation(queue: "q") { _ in 1 }, AnyTaskOperation(queue: "q") { _ in 2 }]
            }
            override func operationDidFinish(_ operation: QueueOperation) {
                (job as? ReleasingJob)?.answers.append(operation.releaseSlot())
            }
        }
        final class ReleasingJob: Job, @unchecked Sendable {
            let answers = Log<Bool>()
            override class var managerClass: JobManager.Type { ReleasingManager.self }
        }
        let dispatcher = Dispatcher(name: "release-in-hook", queues: ["q": 1])
        let job = ReleasingJob()
        dispatcher.add(job)
        _ = try await job.value
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(job.answers.all, [false, false])
        XCTAssertEqual(dispatcher.load(of: "q").running, 0)
        XCTAssertEqual(dispatcher.load(of: "q").waiting, 0)
    }

    /// The wait for all jobs waits for their operations' slots too: a canceled job whose operation goes
    /// on (it ignores the cancel) has ended, but the wait returns only once the operation completed.
    func testTheWaitForAllJobsWaitsForAnOperationThatGoesOnAfterItsJobWasCanceled() async throws {
        /// Ends only when `finish` opens, whatever happens to its job meanwhile.
        final class StubbornOperation: QueueOperation, @unchecked Sendable {
            let started = Gate()
            let finish = Gate()
            override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
                started.open()
                Task { [finish] in
                    _ = await finish.opened()
                    completion(.success(0))
                }
            }
        }
        let dispatcher = Dispatcher(name: "wait-for-slots", queues: ["q": 1])
        let operation = StubbornOperation(queue: "q")
        let started = operation.started
        let finish = operation.finish
        let job = TestGraphJob { [operation] }
        dispatcher.add(job)
        guard await started.opened() else { return XCTFail("the operation did not start") }
        job.cancel()
        await eventually { dispatcher.activeJobCount == 0 }
        let waited = Log<Bool>()
        let waiter = Task {
            await dispatcher.waitForAllJobs()
            waited.append(true)
        }
        try await Task.sleep(nanoseconds: 50_000_000)  // room for a wait that would return early
        XCTAssertEqual(waited.all, [], "the wait returned while an operation held its slot")
        XCTAssertEqual(dispatcher.load(of: "q").running, 1)
        finish.open()
        await waiter.value
        XCTAssertEqual(waited.all, [true])
        XCTAssertEqual(dispatcher.load(of: "q").running, 0)
    }

    func testAQueueNobodyConfiguredGetsTheDefaultLimit() async throws {
        let dispatcher = Dispatcher(name: "defaults", defaultLimit: 2)
        XCTAssertEqual(dispatcher.limit(for: "anything"), 2)
        let probe = ConcurrencyProbe()
        let release = Gate()
        for index in 0..<6 { dispatcher.add(holdingJob(index, queue: "anything", probe: probe, release: release)) }
        // A slot is taken before the operation's task enters the probe: wait for both.
        await eventually { dispatcher.load(of: "anything").running == 2 && probe.peak("anything") == 2 }
        release.open()
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(probe.peak("anything"), 2)
        XCTAssertEqual(Dispatcher(name: "d").defaultLimit, Dispatcher.defaultQueueLimit)
        XCTAssertGreaterThanOrEqual(Dispatcher.defaultQueueLimit, 2)
    }

    func testLimitsBelowOneCountAsOne() {
        let dispatcher = Dispatcher(name: "clamped", queues: ["zero": 0, "negative": -5], defaultLimit: 0)
        XCTAssertEqual(dispatcher.limit(for: "zero"), 1)
        XCTAssertEqual(dispatcher.limit(for: "negative"), 1)
        XCTAssertEqual(dispatcher.defaultLimit, 1)
        dispatcher.setLimit(-1, for: "later")
        XCTAssertEqual(dispatcher.limit(for: "later"), 1)
    }

    func testRaisingALimitStartsWaitingOperationsAtOnce() async throws {
        let dispatcher = Dispatcher(name: "raise", queues: ["q": 1])
        let probe = ConcurrencyProbe()
        let release = Gate()
        for index in 0..<5 { dispatcher.add(holdingJob(index, queue: "q", probe: probe, release: release)) }
        await eventually { dispatcher.load(of: "q").running == 1 }
        XCTAssertEqual(dispatcher.load(of: "q").waiting, 4)
        dispatcher.setLimit(4, for: "q")
        // No operation ended: the three new slots went to waiting operations.
        await eventually { dispatcher.load(of: "q").running == 4 && probe.peak("q") == 4 }
        XCTAssertEqual(dispatcher.load(of: "q").waiting, 1)
        release.open()
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(probe.peak("q"), 4)
    }

    func testLoweringALimitLetsRunningOperationsFinishAndStartsNoneUntilBelowIt() async throws {
        let dispatcher = Dispatcher(name: "lower", queues: ["q": 3])
        let probe = ConcurrencyProbe()
        let gates = (0..<8).map { _ in Gate() }
        let jobs = gates.enumerated().map { index, gate in holdingJob(index, queue: "q", probe: probe, release: gate) }
        for job in jobs { dispatcher.add(job) }
        await eventually { dispatcher.load(of: "q").running == 3 }
        dispatcher.setLimit(1, for: "q")
        XCTAssertEqual(dispatcher.load(of: "q").running, 3, "running operations are not stopped")
        // Two of the three running ones end: no new one may start (2 → 1 running, still ≥ the limit).
        let running = jobs.filter { $0.state == .executing }
        XCTAssertEqual(running.count, 3)
        gates[running[0].tag].open()
        gates[running[1].tag].open()
        await eventually { dispatcher.load(of: "q").running == 1 }
        XCTAssertEqual(dispatcher.load(of: "q").waiting, 5)
        XCTAssertEqual(jobs.filter { $0.state == .executing }.count, 1)
        for gate in gates { gate.open() }
        await dispatcher.waitForAllJobs()
        XCTAssertTrue(jobs.allSatisfy { $0.state == .finished })
    }
}
