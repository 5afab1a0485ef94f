import Dispatch
import Foundation
import XCTest

@_spi(YXQueueInternals) @testable import YXQueue

/// An error that says whether trying again can help.
private struct Flaky: TransientError, Equatable {
    let isTransient: Bool
    var code = 0
}

/// Fails with a transient error `failures` times, then returns `"ok after N"`.
private struct FlakyJob: JobDefinition {
    let failures: Int
    let tries: Locked<Int>
    var retryPolicy: RetryPolicy { RetryPolicy(retries: 3, initialDelay: 0.01, maxDelay: 0.05) }
    var work: JobWork<String> {
        .run(on: "flaky") { _ in
            let attempt = tries.withLock { t -> Int in
                t += 1
                return t
            }
            if attempt <= failures { throw Flaky(isTransient: true, code: attempt) }
            return "ok after \(attempt)"
        }
    }
}

/// A graph whose second step fails once: a retry must not run the first step again.
private struct TwoSteps: JobDefinition {
    let firstRuns: Locked<Int>
    let secondRuns: Locked<Int>
    var retryPolicy: RetryPolicy { RetryPolicy(retries: 2, initialDelay: 0.01, scope: .allErrors) }
    var work: JobWork<Int> {
        let first = JobStep(on: "graph") { _ in firstRuns.withLock { $0 += 1; return 20 } }
        let second = JobStep(on: "graph", after: first) { value, _ in
            let run = secondRuns.withLock { $0 += 1; return $0 }
            if run == 1 { throw TestFailure(code: 1) }
            return value + 1
        }
        return JobWork(second)
    }
}

final class RetryTests: XCTestCase {
    /// A policy is plain data: it round-trips through JSON (the durable stores keep it), and decoding
    /// clamps what a policy made in code clamps.
    func testAPolicyIsCodableAndClampedWhenDecoded() throws {
        let policy = RetryPolicy(retries: 3, initialDelay: 0.5, maxDelay: 30, jitter: 0.1, maxRetryAfter: 90, scope: .allErrors)
        let decoded = try JSONDecoder().decode(RetryPolicy.self, from: try JSONEncoder().encode(policy))
        XCTAssertEqual(decoded, policy)
        let odd = try JSONDecoder().decode(RetryPolicy.self, from: Data(#"{"retries": -2, "jitter": 7}"#.utf8))
        XCTAssertEqual(odd, RetryPolicy(retries: 0, jitter: 1))
        XCTAssertEqual(Set([policy, decoded, odd]).count, 2)
    }

    func testATransientFailureIsRetriedWithinTheAttempt() async throws {
        let dispatcher = Dispatcher(name: "retry", queues: ["flaky": 1])
        let tries = Locked(0)
        let handle = JobHandle(FlakyJob(failures: 2, tries: tries))
        let recorder = Recorder()
        handle.job.addDelegate(recorder)
        let events = handle.events
        handle.start(on: dispatcher)
        var retries = 0
        for await event in events {
            if case .retrying(let delay, let error) = event {
                retries += 1
                XCTAssertLessThanOrEqual(delay, .milliseconds(100))
                XCTAssertEqual((error as? Flaky)?.code, retries)
            }
        }
        let output = try await handle.value
        XCTAssertEqual(output, "ok after 3")
        XCTAssertEqual(retries, 2)
        XCTAssertEqual(handle.job.attempt, 1, "retries happen within one attempt")
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(recorder.log(of: handle.job).filter(\.isTerminal), [.finished])
        XCTAssertEqual(recorder.allViolations, [])
    }

    func testRetriesRunOutAndTheLastErrorStands() async throws {
        let dispatcher = Dispatcher(name: "retry-out")
        let tries = Locked(0)
        do {
            _ = try await dispatcher.run(FlakyJob(failures: 10, tries: tries))
            XCTFail("expected a failure")
        } catch let error as Flaky {
            XCTAssertEqual(error.code, 4, "1 try + 3 retries")
        }
        XCTAssertEqual(tries.withLock { $0 }, 4)
    }

    func testAnErrorThatIsNotTransientIsNotRetried() async throws {
        struct Once: JobDefinition {
            let tries: Locked<Int>
            var retryPolicy: RetryPolicy { RetryPolicy(retries: 5, initialDelay: 0.01) }
            var work: JobWork<Void> {
                .run(on: "q") { _ in
                    tries.withLock { $0 += 1 }
                    throw Flaky(isTransient: false)
                }
            }
        }
        let tries = Locked(0)
        do {
            try await Dispatcher(name: "no-retry").run(Once(tries: tries))
            XCTFail("expected a failure")
        } catch {
            XCTAssertEqual(error as? Flaky, Flaky(isTransient: false))
        }
        XCTAssertEqual(tries.withLock { $0 }, 1)
        XCTAssertFalse(RetryPolicy().allowsRetry(of: CancellationError()))
        XCTAssertNil(RetryPolicy.never.delay(after: Flaky(isTransient: true), retriesUsed: 0))
    }

    func testARetryDoesNotRunStepsThatSucceeded() async throws {
        let first = Locked(0)
        let second = Locked(0)
        let value = try await Dispatcher(name: "graph-retry").run(TwoSteps(firstRuns: first, secondRuns: second))
        XCTAssertEqual(value, 21)
        XCTAssertEqual(first.withLock { $0 }, 1)
        XCTAssertEqual(second.withLock { $0 }, 2)
    }

    /// A restart is a new attempt: every step runs again, none takes an output of the failed attempt.
    func testARestartRunsEveryStepAgain() async throws {
        struct FailsFirstTime: JobDefinition {
            let firstRuns: Locked<Int>
            let secondRuns: Locked<Int>
            var work: JobWork<Int> {
                let first = JobStep(on: "graph") { _ in firstRuns.withLock { $0 += 1; return $0 * 10 } }
                let second = JobStep(on: "graph", after: first) { value, _ in
                    let run = secondRuns.withLock { $0 += 1; return $0 }
                    if run == 1 { throw TestFailure(code: 1) }
                    return value + 1
                }
                return JobWork(second)
            }
        }
        let first = Locked(0)
        let second = Locked(0)
        let handle = Dispatcher(name: "graph-restart").start(FailsFirstTime(firstRuns: first, secondRuns: second))
        do {
            _ = try await handle.value
            XCTFail("expected the first attempt to fail")
        } catch {
            XCTAssertEqual(error as? TestFailure, TestFailure(code: 1))
        }
        XCTAssertTrue(handle.restart())
        let value = try await handle.value
        XCTAssertEqual(value, 21, "the second attempt's first step ran again (20), not the first's output (10)")
        XCTAssertEqual(first.withLock { $0 }, 2)
        XCTAssertEqual(second.withLock { $0 }, 2)
    }

    /// A job that waits for its retry holds no slot: another job of the same queue runs meanwhile.
    func testAJobWaitingToRetryHoldsNoQueueSlot() async throws {
        struct SlowRetry: JobDefinition {
            let tries: Locked<Int>
            var retryPolicy: RetryPolicy { RetryPolicy(retries: 1, initialDelay: 30, jitter: 0) }
            var work: JobWork<String> {
                .run(on: "single") { _ in
                    if tries.withLock({ $0 += 1; return $0 }) == 1 { throw Flaky(isTransient: true) }
                    return "retried"
                }
            }
        }
        let dispatcher = Dispatcher(name: "retry-slot", queues: ["single": 1])
        let waiting = JobHandle(SlowRetry(tries: Locked(0)))
        let events = waiting.events
        waiting.start(on: dispatcher)
        for await event in events {
            if case .retrying = event { break }
        }
        // The queue's one slot is free while the first job waits 30 s.
        let other = try await dispatcher.run(Square2(value: 7))
        XCTAssertEqual(other, 49)
        XCTAssertEqual(waiting.state, .executing)
        // Canceling during the wait is prompt.
        waiting.cancel()
        await assertThrowsCancellation { _ = try await waiting.value }
        await dispatcher.waitForAllJobs()
    }

    func testADeadlineEndsAJobThatRunsTooLong() async throws {
        struct Sleeper: JobDefinition {
            var deadline: Duration? { .milliseconds(50) }
            var work: JobWork<Void> {
                .run(on: "q") { _ in try await Task.sleep(nanoseconds: 60_000_000_000) }
            }
        }
        let dispatcher = Dispatcher(name: "deadline")
        do {
            try await dispatcher.run(Sleeper())
            XCTFail("expected the deadline")
        } catch let error as JobError {
            XCTAssertEqual(error, .deadlineExceeded(.milliseconds(50)))
        }
        await dispatcher.waitForAllJobs()
    }

    /// A failure's `isTransient` and `retryAfter` are the error's own code, run with no lock of the job
    /// held: here it reads the job's operations (another thread does, with a bound, so that a held lock
    /// fails the test instead of hanging it).
    func testAnErrorMayLookAtItsJobWhileItIsClassified() async throws {
        struct Curious: TransientError {
            let job: Locked<ClosureJob?>
            let readFreely: Locked<[Bool]>
            var isTransient: Bool {
                let job = self.job.withLock { $0 }
                let read = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    _ = job?.manager?.operations
                    read.signal()
                }
                let free = read.wait(timeout: .now() + 10) == .success
                readFreely.withLock { $0.append(free) }
                return true
            }
        }
        let holder = Locked<ClosureJob?>(nil)
        let readFreely = Locked<[Bool]>([])
        let runs = Locked(0)
        let job = ClosureJob(retryPolicy: RetryPolicy(retries: 1, initialDelay: 0, jitter: 0)) { _ in
            if runs.withLock({ $0 += 1; return $0 }) == 1 { throw Curious(job: holder, readFreely: readFreely) }
            return "second try"
        }
        holder.withLock { $0 = job }
        let dispatcher = Dispatcher(name: "curious")
        dispatcher.add(job)
        await dispatcher.waitForAllJobs()
        holder.withLock { $0 = nil }
        XCTAssertEqual(job.state, .finished)
        XCTAssertEqual(job.result as? String, "second try")
        XCTAssertEqual(readFreely.withLock { $0 }, [true])
    }

    /// An operation runs once: a retry whose build returns an operation of the set it replaces, one that
    /// already ran, fails as an invalid graph. (It was taken for an operation added twice and skipped:
    /// the retry finished with the other operations only.)
    func testARetryThatBuildsAnOperationThatRanAgainIsAnInvalidGraph() async throws {
        final class ReusingJob: Job, @unchecked Sendable {
            let sets = Locked(0)
            let first = AnyTaskOperation(queue: "reuse") { _ in "first" }
            override class var managerClass: JobManager.Type { ReusingManager.self }
        }
        final class ReusingManager: JobManager, @unchecked Sendable {
            override func makeOperations() -> [QueueOperation] {
                guard let job = job as? ReusingJob else { return [] }
                if job.sets.withLock({ $0 += 1; return $0 }) == 1 {
                    let failing = AnyTaskOperation(queue: "reuse") { _ in throw TestFailure(code: 5) }
                    failing.addPrerequisite(job.first)
                    return [job.first, failing]
                }
                return [job.first, AnyTaskOperation(queue: "reuse") { _ in "new" }]
            }
        }
        let job = ReusingJob(retryPolicy: RetryPolicy(retries: 1, initialDelay: 0, jitter: 0, scope: .allErrors))
        let dispatcher = Dispatcher(name: "reuse")
        dispatcher.add(job)
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(job.sets.withLock { $0 }, 2)
        XCTAssertEqual(job.state, .failed)
        guard case .invalidOperationGraph(let reason) = job.error as? JobError else {
            return XCTFail("\(String(describing: job.error))")
        }
        XCTAssertTrue(reason.contains("already ran"), reason)
    }

    func testThePolicysWaitsGrowAndHonourAskedWaits() {
        let policy = RetryPolicy(retries: 5, initialDelay: 1, maxDelay: 8, jitter: 0)
        XCTAssertEqual(policy.delay(beforeRetry: 1), 1)
        XCTAssertEqual(policy.delay(beforeRetry: 3), 4)
        XCTAssertEqual(policy.delay(beforeRetry: 10), 8)
        XCTAssertEqual(policy.delay(beforeRetry: 1, retryAfter: 20), 20)
        struct Busy: TransientError {
            var isTransient: Bool { true }
            var retryAfter: TimeInterval? { 7200 }
        }
        XCTAssertNil(policy.delay(after: Busy(), retriesUsed: 0), "a wait longer than maxRetryAfter is not waited")
        let odd = RetryPolicy(retries: -1, initialDelay: .nan, maxDelay: .infinity, jitter: 9)
        XCTAssertEqual(odd.retries, 0)
        XCTAssertEqual(odd.initialDelay, 0)
        XCTAssertEqual(odd.jitter, 1)
    }
}

private struct Square2: JobDefinition {
    let value: Int
    var work: JobWork<Int> { .run(on: "single") { _ in value * value } }
}
