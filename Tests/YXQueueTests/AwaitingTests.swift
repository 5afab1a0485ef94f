import Dispatch
import Foundation
import XCTest

@_spi(YXQueueInternals) @testable import YXQueue

/// Awaiting jobs from Swift concurrency: `run`, `value` and `events` never run what a cancelled task
/// asked for, never hang on a job that will not run, and let a cancelled waiter go.
final class AwaitingTests: XCTestCase {
    /// Defect 1 of issue 12: `withTaskCancellationHandler` runs `onCancel` before the body when the task
    /// is already cancelled; the job was not active yet, so `cancel()` did nothing and `run` ran it whole.
    func testRunInAnAlreadyCancelledTaskNeverRunsTheJob() async throws {
        let dispatcher = Dispatcher(name: "pre-cancelled")
        let ran = Locked(false)
        let job = ClosureJob { _ in
            ran.withLock { $0 = true }
            return "ran"
        }
        let recorder = Recorder()
        job.addDelegate(recorder)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await job.run(on: dispatcher)
        }
        do {
            let value = try await task.value
            XCTFail("a cancelled task ran the job to its end: \(String(describing: value))")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        await dispatcher.waitForAllJobs()
        XCTAssertFalse(ran.withLock { $0 }, "the job's work ran")
        XCTAssertEqual(job.state, .canceled)
        XCTAssertEqual(recorder.log(of: job), [.canceled])
    }

    /// Defect 2 of issue 12: a caller awaits a job that was never started, and the job is dropped: the
    /// attempt it waits for will never begin, so the wait ends.
    func testAwaitingAJobThatIsDroppedBeforeItStartsEnds() async throws {
        let job = ClosureJob { _ in "never" }
        let waiter = Task { try await job.value }
        await eventually { job.core.withLock { !$0.observers.isEmpty } }
        job.drop()
        do {
            _ = try await waiter.value
            XCTFail("a dropped job produced a value")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        XCTAssertEqual(job.state, .dropped)
        XCTAssertTrue(job.core.withLock { $0.observers.isEmpty }, "the waiter unregistered")
        // Later waits and streams end at once too.
        do {
            _ = try await job.value
            XCTFail("a dropped job produced a value")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        var events: [JobEvent] = []
        for await event in job.events { events.append(event) }
        XCTAssertTrue(events.isEmpty)
    }

    /// The same for an event stream taken before the drop.
    func testAStreamOfAJobDroppedBeforeItStartsEnds() async throws {
        let job = ClosureJob { _ in "never" }
        let events = job.events
        job.drop()
        var seen: [String] = []
        for await event in events { seen.append(event.description) }
        XCTAssertEqual(seen, ["canceled"])
    }

    /// Defect 2 of issue 12: cancelling the task that awaits `value` ends the wait at once; the job goes
    /// on (it belongs to whoever started it).
    func testCancellingAWaiterEndsTheWaitButNotTheJob() async throws {
        let dispatcher = Dispatcher(name: "waiter-cancel")
        let started = Gate()
        let release = Gate()
        let job = ClosureJob { _ in
            started.open()
            guard await release.opened() else { throw TestFailure(code: -1) }
            return "done"
        }
        dispatcher.add(job)
        await assertOpens(started)
        let waiter = Task { try await job.value }
        await eventually { job.core.withLock { !$0.observers.isEmpty } }
        waiter.cancel()
        do {
            _ = try await waiter.value
            XCTFail("the wait went on after its task was cancelled")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        XCTAssertEqual(job.state, .executing, "cancelling a waiter does not cancel the job")
        XCTAssertTrue(job.core.withLock { $0.observers.isEmpty }, "the cancelled waiter unregistered")
        release.open()
        let value = try await job.value
        XCTAssertEqual(value as? String, "done")
    }

    /// A waiter whose task was cancelled before it began waiting does not wait at all.
    func testAWaiterCancelledBeforeItWaitsReturnsAtOnce() async throws {
        let job = ClosureJob { _ in "never" }
        let waiter = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await job.value
        }
        do {
            _ = try await waiter.value
            XCTFail("expected CancellationError")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        XCTAssertTrue(job.core.withLock { $0.observers.isEmpty })
        XCTAssertEqual(job.state, .ready)
    }
}
