import Dispatch
import Foundation
import XCTest

@_spi(YXQueueInternals) @testable import YXQueue

/// `submit` waits while `maxPendingJobs` jobs are active: a producer of many jobs keeps memory flat.
final class BackPressureTests: XCTestCase {
    private struct Hold: JobDefinition {
        let release: Gate
        let active: ConcurrencyProbe
        var work: JobWork<Void> {
            .run(on: "work") { _ in
                active.enter("jobs")
                defer { active.leave("jobs") }
                guard await release.opened() else { throw TestFailure(code: -1) }
            }
        }
    }

    func testSubmitNeverLetsMoreThanTheBoundBeActive() async throws {
        let dispatcher = Dispatcher(name: "bounded", queues: ["work": 100], maxPendingJobs: 3)
        let probe = ConcurrencyProbe()
        let gates = (0..<20).map { _ in Gate() }
        let submitted = Locked(0)
        let producer = Task {
            for gate in gates {
                try await dispatcher.submit(Hold(release: gate, active: probe))
                submitted.withLock { $0 += 1 }
            }
        }
        await eventually { submitted.withLock { $0 } == 3 }
        XCTAssertEqual(dispatcher.activeJobCount, 3)
        // The producer waits: nothing more is submitted while three are active.
        try await Task.sleep(nanoseconds: 50_000_000)
        XCTAssertEqual(submitted.withLock { $0 }, 3)
        for gate in gates { gate.open() }
        try await producer.value
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(submitted.withLock { $0 }, 20)
        XCTAssertLessThanOrEqual(probe.peak("jobs"), 3)
    }

    func testManyProducersShareTheBound() async throws {
        let dispatcher = Dispatcher(name: "bounded-many", queues: ["work": 100], maxPendingJobs: 4)
        let probe = ConcurrencyProbe()
        let release = Gate()
        release.open()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    for _ in 0..<50 { try await dispatcher.submit(Hold(release: release, active: probe)) }
                }
            }
            try await group.waitForAll()
        }
        await dispatcher.waitForAllJobs()
        XCTAssertLessThanOrEqual(probe.peak("jobs"), 4)
    }

    func testCancellingAWaitingSubmitStartsNothing() async throws {
        let dispatcher = Dispatcher(name: "bounded-cancel", maxPendingJobs: 1)
        let probe = ConcurrencyProbe()
        let release = Gate()
        try await dispatcher.submit(Hold(release: release, active: probe))
        let waiting = Task { try await dispatcher.submit(Hold(release: release, active: probe)) }
        try await Task.sleep(nanoseconds: 20_000_000)
        waiting.cancel()
        await assertThrowsCancellation { _ = try await waiting.value }
        XCTAssertEqual(dispatcher.activeJobCount, 1)
        release.open()
        await dispatcher.waitForAllJobs()
        // The cancelled waiter gave its place back: the next submit goes at once.
        try await dispatcher.submit(Hold(release: release, active: probe))
        await dispatcher.waitForAllJobs()
    }

    /// A submit with room goes at once, without waiting in line; from a task already cancelled it
    /// throws and starts nothing, room or not, and leaves no place reserved.
    func testSubmitFromACancelledTaskStartsNothingEvenWithRoom() async throws {
        let dispatcher = Dispatcher(name: "bounded-cancelled", maxPendingJobs: 2)
        let started = Log<Int>()
        let cancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await dispatcher.submit(ClosureJob { _ in started.append(1); return nil })
        }
        await assertThrowsCancellation { _ = try await cancelled.value }
        XCTAssertEqual(dispatcher.activeJobCount, 0)
        for value in 2...3 {
            let began = try await dispatcher.submit(ClosureJob { _ in started.append(value); return nil })
            XCTAssertTrue(began)
        }
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(started.all.sorted(), [2, 3], "both places were free again")
    }

    func testRaisingTheBoundReleasesWaiters() async throws {
        let dispatcher = Dispatcher(name: "bounded-raise", maxPendingJobs: 1)
        let probe = ConcurrencyProbe()
        let release = Gate()
        try await dispatcher.submit(Hold(release: release, active: probe))
        let second = Task { try await dispatcher.submit(Hold(release: release, active: probe)) }
        try await Task.sleep(nanoseconds: 20_000_000)
        XCTAssertEqual(dispatcher.activeJobCount, 1)
        dispatcher.maxPendingJobs = 2
        _ = try await second.value
        XCTAssertEqual(dispatcher.activeJobCount, 2)
        release.open()
        await dispatcher.waitForAllJobs()
    }
}
