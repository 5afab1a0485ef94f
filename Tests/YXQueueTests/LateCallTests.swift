import Dispatch
import Foundation
import Logging
import XCTest

@_spi(YXQueueInternals) @testable import YXQueue

/// Calls that reach a manager late, from a thread that was held back while other threads moved the job
/// on: a begin of an attempt that ended, a build that returns after its attempt ended, progress and
/// additions from a set of operations that a retry replaced. Each is held at its critical point with
/// semaphores, so the order is the same in every run.
final class LateCallTests: XCTestCase {
    /// Holds the thread that logs the start of attempt 2 until released: that thread has begun the
    /// attempt in the job, and not yet in its manager.
    private final class HoldingLogHandler: LogHandler, @unchecked Sendable {
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .debug
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            guard event.message.description == "job started", event.metadata?["attempt"]?.description == "2" else {
                return
            }
            held.signal()
            release.wait()
        }
    }

    /// Waits for `semaphore` without holding a thread of the cooperative pool.
    private static func wait(for semaphore: DispatchSemaphore) async {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                semaphore.wait()
                continuation.resume()
            }
        }
    }

    /// Attempt 1's operation goes on executing after a cancel, so attempt 3's begin waits for it. The
    /// begin of attempt 2 (canceled meanwhile) arrives after that: it took the waiting place of attempt
    /// 3's, which then never began, and the job stayed active for ever.
    func testALateBeginLeavesTheNewerAttemptsWaitingBeginInPlace() async throws {
        let handler = HoldingLogHandler()
        var logger = Logger(label: "late-begin", factory: { _ in handler })
        logger.logLevel = .debug
        let dispatcher = Dispatcher(name: "late-begin", logger: logger)
        let releaseFirst = DispatchSemaphore(value: 0)
        let runs = Locked(0)
        let job = ClosureJob { _ in
            let run = runs.withLock { $0 += 1; return $0 }
            if run == 1 {
                // Executes on after its attempt is canceled, until released.
                await withCheckedContinuation { continuation in
                    DispatchQueue.global().async {
                        releaseFirst.wait()
                        continuation.resume()
                    }
                }
            }
            return run
        }
        dispatcher.add(job)
        await eventually { job.state == .executing }
        job.cancel()
        let secondStartReturned = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = job.restart()
            secondStartReturned.signal()
        }
        await Self.wait(for: handler.held)
        XCTAssertEqual(job.attempt, 2)
        job.cancel()  // attempt 2 ends before its manager heard of it
        XCTAssertTrue(job.restart())  // attempt 3 waits for attempt 1's operation
        handler.release.signal()  // attempt 2's begin arrives now
        await Self.wait(for: secondStartReturned)
        releaseFirst.signal()
        await eventually(timeout: 10) { job.state.isTerminal }
        XCTAssertEqual(job.state, .finished)
        XCTAssertEqual(job.attempt, 3)
        XCTAssertEqual(job.result as? Int, 2, "attempt 3 ran the body a second time")
        guard job.state.isTerminal else { return }  // waiting for the dispatcher would never end
        await dispatcher.waitForAllJobs()
    }

    /// A build that returns after its attempt was canceled (no restart) binds nothing: its operations
    /// never run and do not hold the job.
    func testABuildThatReturnsAfterItsAttemptEndedBindsNothing() async throws {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let first = AnyTaskOperation(queue: "late-build") { _ in 1 }
        let second = AnyTaskOperation(queue: "late-build") { _ in 2 }
        second.addPrerequisite(first)
        let job = TestGraphJob {
            entered.signal()
            release.wait()
            return [first, second]
        }
        let dispatcher = Dispatcher(name: "late-build")
        let startReturned = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            job.start(on: dispatcher)
            startReturned.signal()
        }
        await Self.wait(for: entered)
        job.cancel()
        release.signal()
        await Self.wait(for: startReturned)
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(job.state, .canceled)
        XCTAssertNil(first.job, "not bound to the ended attempt")
        XCTAssertNil(second.job, "not bound to the ended attempt")
        XCTAssertFalse(first.isFinished, "never submitted")
        XCTAssertEqual(job.manager?.operations.count, 0)
    }

    /// An operation that completes inside `execute`, on the thread that starts it.
    private final class InlineOperation: QueueOperation, @unchecked Sendable {
        let work = Locked<(@Sendable () throws -> (any Sendable)?)?>(nil)
        override var executesInline: Bool { true }
        override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
            let work = self.work.withLock { $0 }
            completion(Result { try work?() })
        }
    }

    /// A job whose manager builds what `build` returns for each set (1 for the first).
    private final class SetsJob: Job, @unchecked Sendable {
        let build: @Sendable (Int) -> [QueueOperation]
        let sets = Locked(0)
        init(build: @escaping @Sendable (Int) -> [QueueOperation]) {
            self.build = build
            super.init(retryPolicy: RetryPolicy(retries: 1, initialDelay: 0, maxDelay: 0, jitter: 0, scope: .allErrors))
        }
        override class var managerClass: JobManager.Type { SetsManager.self }
    }

    private final class SetsManager: JobManager, @unchecked Sendable {
        override func makeOperations() -> [QueueOperation] {
            guard let job = job as? SetsJob else { return [] }
            return job.build(job.sets.withLock { $0 += 1; return $0 })
        }
    }

    /// An operation that executes until `release` opens, whether canceled or not.
    private static func heldOperation(until release: DispatchSemaphore, started: DispatchSemaphore? = nil) -> AnyTaskOperation {
        AnyTaskOperation(queue: "sets") { _ in
            started?.signal()
            await Self.wait(for: release)
            return nil
        }
    }

    /// The first set fails while its other operation still executes: the retry waits for that one, and
    /// begins on its thread when it completes, before it is marked finished. Progress it reports then
    /// (here from the retry's own operation, on that thread) named a node of the new set by its old
    /// index: past the end of the new set it trapped, inside it it moved another node's progress.
    func testProgressOfAReplacedSetDoesNotReachTheRetry() async throws {
        let releaseReporter = DispatchSemaphore(value: 0)
        let lateReporter = Self.heldOperation(until: releaseReporter)
        let progressAtRetry = Locked<Double?>(nil)
        let job = SetsJob { set in
            if set == 1 {
                let failing = InlineOperation(queue: "sets")
                failing.work.withLock { $0 = { throw TestFailure(code: 1) } }
                return [lateReporter, failing]
            }
            let retry = InlineOperation(queue: "sets")
            retry.work.withLock {
                $0 = { [weak retry] in
                    // The old set's operation still executes: its binding names index 0.
                    lateReporter.reportProgress(0.99)
                    progressAtRetry.withLock { $0 = retry?.job?.progress }
                    return "retried"
                }
            }
            return [retry]
        }
        let dispatcher = Dispatcher(name: "sets", queues: ["sets": 4])
        dispatcher.add(job)
        await eventually { job.manager?.hasDeferredBegin == true }
        releaseReporter.signal()
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(job.state, .finished)
        XCTAssertEqual(job.result as? String, "retried")
        XCTAssertEqual(job.sets.withLock { $0 }, 2)
        XCTAssertEqual(progressAtRetry.withLock { $0 }, 0, "the old set's progress did not count in the retry")
    }

    /// An addition for the first set (an operation that waits for one of it) comes after a failure in
    /// the set began the retry. It extends a set that is over: it does not join the retry, where its
    /// prerequisite's old index names another node.
    func testOperationsAddedForAReplacedSetDoNotJoinTheRetry() async throws {
        let retryStarted = DispatchSemaphore(value: 0)
        let releaseRetry = DispatchSemaphore(value: 0)
        let addedRan = Locked(false)
        let succeeding = InlineOperation(queue: "sets")
        succeeding.work.withLock { $0 = { "first" } }
        let failing = InlineOperation(queue: "sets")
        failing.work.withLock { $0 = { throw TestFailure(code: 2) } }
        failing.addPrerequisite(succeeding)
        let job = SetsJob { set in
            if set == 1 { return [succeeding, failing] }
            return [Self.heldOperation(until: releaseRetry, started: retryStarted)]
        }
        let dispatcher = Dispatcher(name: "added-late", queues: ["sets": 4])
        dispatcher.add(job)
        await Self.wait(for: retryStarted)
        let added = AnyTaskOperation(queue: "sets") { _ in
            addedRan.withLock { $0 = true }
            return nil
        }
        added.addPrerequisite(succeeding)
        job.manager?.addOperations([added])
        releaseRetry.signal()
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(job.state, .finished)
        XCTAssertEqual(job.sets.withLock { $0 }, 2)
        XCTAssertFalse(addedRan.withLock { $0 }, "an addition to the replaced set never runs")
        XCTAssertNil(added.job, "not bound")
    }
}
