import Dispatch
import XCTest

@testable import YXQueue

/// What a job lets go of while its state is locked (a removed observer's closure, the last attempt's
/// error and operations) is released after the lock: its deinitializer is the user's code, and may
/// lock a job. Jobs share their mutexes (``StripedLocks/jobs``), so that job may be another one; here it
/// is the same job, which deadlocks if the release comes under the lock. (The first test did, before the
/// observer's removal let go of the closure after the lock.)
final class ReleaseOutsideLockTests: XCTestCase {
    /// A token that something of the job's own holds: releasing the holder removes an observer.
    private final class TokenHolder: Error, @unchecked Sendable {
        var token: JobObservation?
    }

    /// Runs `body` on another thread and fails (instead of hanging) if it does not return.
    private func assertReturns(_ what: String, _ body: @escaping @Sendable () -> Void) {
        let returned = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            body()
            returned.signal()
        }
        XCTAssertEqual(returned.wait(timeout: .now() + 20), .success, "\(what) did not return: a deadlock")
    }

    func testRemovingAnObserverReleasesItsClosureAfterTheLock() {
        let job = Job()
        let holder = TokenHolder()
        do {
            let inner = job.onFinish { _, _ in }
            // The inner observation now lives only in the outer observer's closure.
            holder.token = job.onFinish { _, _ in withExtendedLifetime(inner) {} }
        }
        assertReturns("removing the outer observer") { holder.token = nil }
    }

    func testARestartReleasesTheLastErrorAfterTheLock() async throws {
        let dispatcher = Dispatcher(name: "release-outside-lock")
        let job = GraphJob(name: "fails-holding-a-token") { _ in
            [
                TaskOperation<Void>(queue: "fail") { operation in
                    // The error holds an observation of its own job: the job's error is its only owner.
                    let holder = TokenHolder()
                    holder.token = operation.job?.onStart { _ in }
                    throw holder
                }
            ]
        }
        do {
            _ = try await job.run(on: dispatcher)
            XCTFail("the job finished")
        } catch {
            XCTAssertTrue(error is TokenHolder, "\(error)")
        }
        XCTAssertEqual(job.state, .failed)
        // The restart clears the error and replaces the failed operation, which holds it too: the holder
        // goes with the last of them, and its token removes the observer.
        assertReturns("the restart") { XCTAssertTrue(job.restart()) }
        job.cancel()
    }
}
