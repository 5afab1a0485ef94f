import XCTest
@testable import YXJobStore

final class ChangeSignalTests: XCTestCase {
    func testASignalWakesAWaiter() async {
        let signal = ChangeSignal()
        let generation = signal.generation
        let waiter = Task { await signal.wait(after: generation, timeout: .seconds(600)) }
        while !signal.hasWaiters { await Task.yield() }
        signal.signal()
        await waiter.value
        XCTAssertNotEqual(signal.generation, generation)
    }

    func testASignalBeforeTheWaitIsNotLost() async {
        let signal = ChangeSignal()
        let generation = signal.generation
        signal.signal()
        // Returns at once: the generation moved since it was read.
        await signal.wait(after: generation, timeout: .seconds(600))
    }

    func testCancelEndsTheWait() async {
        let signal = ChangeSignal()
        let waiter = Task { await signal.wait(after: signal.generation, timeout: .seconds(600)) }
        waiter.cancel()
        await waiter.value
        XCTAssertFalse(signal.hasWaiters)
    }

    func testTheTimeoutEndsTheWait() async {
        let signal = ChangeSignal()
        await signal.wait(after: signal.generation, timeout: .milliseconds(10))
        XCTAssertFalse(signal.hasWaiters)
    }

    func testManyWaitersAndSignalsFromManyTasks() async {
        let signal = ChangeSignal()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    for _ in 0..<20 {
                        let generation = signal.generation
                        signal.signal()
                        await signal.wait(after: generation, timeout: .seconds(600))
                    }
                }
            }
        }
        XCTAssertFalse(signal.hasWaiters)
    }
}
