import Dispatch
import Foundation
import XCTest

@testable import YXQueue

/// What a job lets go of while its state is locked (a removed observer's closure, the last attempt's
/// error and operations) is released after the lock: its deinitializer is the user's code, and may
/// lock a job. Jobs share their mutexes (``StripedLocks/jobs``), so that job may be another one; here it
/// is the same job, which deadlocks if the release comes under the lock. (The observer's test did, before
/// the removal let go of the closure after the lock.)
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

    /// The error of the first attempt, while it lives.
    private final class FirstError: @unchecked Sendable {
        private let lock = NSLock()
        private weak var stored: TokenHolder?
        private var made = false

        /// A new holder on the first call (kept weakly here), nil after.
        func makeOnce() -> TokenHolder? {
            lock.withLock {
                guard !made else { return nil }
                made = true
                let holder = TokenHolder()
                stored = holder
                return holder
            }
        }

        var holder: TokenHolder? { lock.withLock { stored } }
    }

    /// A restart lets go of the failed attempt's error (the job holds it, and so does the failed
    /// operation, which the restart replaces): the error's deinitializer removes an observer of the job,
    /// and must find its lock free.
    func testARestartLetsGoOfTheLastErrorWithoutADeadlock() async throws {
        let dispatcher = Dispatcher(name: "release-outside-lock")
        let first = FirstError()
        let job = GraphJob(name: "fails-holding-a-token") { _ in
            [
                TaskOperation<Void>(queue: "fail") { operation in
                    // The error holds an observation of its own job.
                    guard let holder = first.makeOnce() else { return }
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
        XCTAssertNotNil(first.holder, "the failed job keeps its error")
        assertReturns("the restart") { XCTAssertTrue(job.restart()) }
        XCTAssertNil(first.holder, "the restart kept the failed attempt's error")
        job.cancel()
    }
}
