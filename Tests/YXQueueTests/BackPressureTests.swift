import Dispatch
import Foundation
import XCTest

@testable import YXQueue

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
        do {
            _ = try await waiting.value
            XCTFail("expected cancellation")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        XCTAssertEqual(dispatcher.activeJobCount, 1)
        release.open()
        await dispatcher.waitForAllJobs()
        // The cancelled waiter gave its place back: the next submit goes at once.
        try await dispatcher.submit(Hold(release: release, active: probe))
        await dispatcher.waitForAllJobs()
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
