import Dispatch
import Foundation
import Synchronization
import XCTest

@_spi(YXQueueInternals) @testable import YXQueue

final class CallbackTests: XCTestCase {
    func testCallbacksArriveInOrderOnTheCallbackQueueWithOneTerminal() async throws {
        let dispatcher = Dispatcher(name: "order")
        let callbackQueue = DispatchQueue(label: "test.callbacks", attributes: .concurrent)
        let recorder = Recorder()
        var jobs: [ClosureJob] = []
        let start = ContinuousClock.now
        for tag in 0..<20 {
            let job = ClosureJob(tag: tag, callbackQueue: callbackQueue) { op in
                for step in 1...2_000 {
                    op.reportProgress(Double(step) / 2_000)
                    if step % 200 == 0 { try await Task.sleep(nanoseconds: 2_000_000) }
                }
                return tag
            }
            job.addDelegate(recorder)
            jobs.append(job)
            dispatcher.add(job)
        }
        await dispatcher.waitForAllJobs()
        let elapsed = ContinuousClock.now - start
        // At most one progress callback per interval (100 ms), plus the first and the final one: however
        // long a loaded machine makes the jobs take, 2,000 reports each give a handful of callbacks.
        let intervals = Int(elapsed / .nanoseconds(Int64(Job.progressInterval)))
        let mostCallbacks = 3 + intervals + 2
        XCTAssertLessThan(mostCallbacks, 2_000, "the run was too slow to tell throttling apart")
        XCTAssertEqual(recorder.allViolations, [])
        for job in jobs {
            let log = recorder.log(of: job)
            XCTAssertEqual(log.first, .started)
            XCTAssertEqual(log.last, .finished)
            XCTAssertEqual(log.filter(\.isTerminal).count, 1)
            XCTAssertEqual(log.dropLast().last, .progress(1), "the final progress is delivered")
            XCTAssertLessThanOrEqual(log.count, mostCallbacks, "progress is throttled (\(elapsed))")
            XCTAssertEqual(job.state, .finished)
            XCTAssertEqual(job.result as? Int, job.tag)
            XCTAssertEqual(job.progress, 1)
        }
    }

    func testAWeightChangedWhileRunningCountsAndProgressNeverGoesBack() async throws {
        let dispatcher = Dispatcher(name: "weights")
        let model = "weights"
        dispatcher.setLimit(2, for: model)
        let checked = Gate()
        let release = Gate()
        let job = TestGraphJob {
            // `first` starts uncounted, then learns it does three quarters of the work.
            let first = AnyTaskOperation(queue: model) { op in
                op.reportProgress(0.5)  // weight 0: the job stays at 0
                op.progressWeight = 3
                op.reportProgress(1)  // 3 × 1 of 3 + 1: the job is at 0.75
                checked.open()
                await release.opened()
                op.progressWeight = 1  // would lower the job to 0.5: it stays at 0.75
                return nil
            }
            first.progressWeight = 0
            let second = AnyTaskOperation(queue: model) { _ in nil }
            second.addPrerequisite(first)
            return [first, second]
        }
        dispatcher.add(job)
        await assertOpens(checked)
        await eventually { job.progress == 0.75 }
        release.open()
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(job.state, .finished)
        XCTAssertEqual(job.progress, 1)
    }

    func testThrottledProgressStillDeliversTheLatestValue() async throws {
        let dispatcher = Dispatcher(name: "throttle")
        let seen = Log<Double>()
        let reported = Gate()
        let release = Gate()
        let job = ClosureJob { op in
            op.reportProgress(0.1)
            op.reportProgress(0.2)
            op.reportProgress(0.3)  // within the throttle window: delivered by the trailing flush
            reported.open()
            await release.opened()
            return nil
        }
        let token = job.onProgress { _, value in seen.append(value) }
        dispatcher.add(job)
        await reported.opened()
        await eventually { seen.all.contains(0.3) }
        release.open()
        await dispatcher.waitForAllJobs()
        // 0.1 at once, 0.3 by the trailing flush, then 1. (0.2 as well only when this task was held back
        // for a whole interval between two reports, as on a loaded machine.)
        let values = seen.all
        XCTAssertEqual(values.first, 0.1)
        XCTAssertEqual(Array(values.suffix(2)), [0.3, 1.0])
        XCTAssertEqual(values, values.sorted())
        XCTAssertTrue(Set(values).isSubset(of: [0.1, 0.2, 0.3, 1.0]), "\(values)")
        _ = token
    }

    func testReleasedDelegateIsNeitherCalledNorKeptAlive() async throws {
        let dispatcher = Dispatcher(name: "weak")
        let gate = Gate()
        let job = ClosureJob { _ in
            await gate.opened()
            return nil
        }
        weak var weakRecorder: Recorder?
        do {
            let recorder = Recorder()
            weakRecorder = recorder
            job.addDelegate(recorder)
        }
        XCTAssertNil(weakRecorder, "the job must not keep its delegate alive")
        dispatcher.add(job)
        let kept = Recorder()
        job.addDelegate(kept)
        gate.open()
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(kept.log(of: job).last, .finished)
    }

    func testRemovedDelegateAndReleasedTokenStopCallbacks() async throws {
        let dispatcher = Dispatcher(name: "tokens")
        let calls = Log<String>()
        let job = ClosureJob { _ in 42 }
        let recorder = Recorder()
        job.addDelegate(recorder)
        job.removeDelegate(recorder)
        var dropped: JobObservation? = job.observe { _, _ in calls.append("dropped") }
        weak let weakToken = dropped
        dropped = nil
        XCTAssertNil(weakToken)
        let invalidated = job.onFinish { _, _ in calls.append("invalidated") }
        invalidated.invalidate()
        let kept = job.onFinish { _, result in calls.append("kept \(result as? Int ?? -1)") }
        dispatcher.add(job)
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(calls.all, ["kept 42"])
        XCTAssertEqual(recorder.log(of: job), [])
        _ = kept
    }

    /// A token holds the job's observer list, not the job: the job goes when its last owner lets go,
    /// and the token can still be invalidated (or released) afterwards. An awaited job goes as well.
    func testTokensAndAwaitsDoNotKeepTheJobAlive() async throws {
        let dispatcher = Dispatcher(name: "token-lifetime")
        let calls = Log<String>()
        weak var weakJob: Job?
        weak var weakAwaited: Job?
        let token: JobObservation
        do {
            let job = ClosureJob { _ in 1 }
            weakJob = job
            token = job.onFinish { _, _ in calls.append("finished") }
            dispatcher.add(job)
            let awaited = ClosureJob { _ in 2 }
            weakAwaited = awaited
            dispatcher.add(awaited)
            let value = try await awaited.value
            XCTAssertEqual(value as? Int, 2)
            await dispatcher.waitForAllJobs()
        }
        // The drain that delivered the last callbacks may still be returning on the callback queue.
        await eventually { weakJob == nil && weakAwaited == nil }
        XCTAssertNil(weakJob, "the token keeps the job alive")
        XCTAssertNil(weakAwaited, "the finished await keeps the job alive")
        token.invalidate()
        token.invalidate()
        XCTAssertEqual(calls.all, ["finished"])
    }

    /// An observer's closure may hold the job; when it holds the last reference, removing the observer
    /// (with the job's state locked) lets the job go, and nothing of the job's end takes that lock again.
    func testRemovingAnObserverThatHoldsTheLastReferenceToItsJobReturns() async throws {
        let dispatcher = Dispatcher(name: "token-last-reference")
        weak var weakJob: Job?
        var token: JobObservation?
        do {
            let job = ClosureJob { _ in 1 }
            weakJob = job
            token = job.observe(.terminal) { _, _ in _ = job.tag }
            dispatcher.add(job)
            _ = try await job.value
            await dispatcher.waitForAllJobs()
        }
        XCTAssertNotNil(weakJob, "the observer's closure holds the job")
        let removal = token
        token = nil
        let returned = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            removal?.invalidate()
            returned.signal()
        }
        XCTAssertEqual(returned.wait(timeout: .now() + 10), .success, "invalidating the token did not return")
        await eventually { weakJob == nil }
        XCTAssertNil(weakJob)
    }

    func testObserversHearOnlyTheKindsTheyAskForAndUnwantedEventsAreNotQueued() async throws {
        let dispatcher = Dispatcher(name: "kinds")
        let callbacks = DispatchQueue(label: "kinds.callbacks")
        let firstReports = Gate()
        let listening = Gate()
        let secondReport = Gate()
        let release = Gate()
        let job = ClosureJob(callbackQueue: callbacks) { op in
            op.reportProgress(0.2)
            op.reportProgress(0.3)
            firstReports.open()
            await listening.opened()
            op.reportProgress(0.6)
            secondReport.open()
            await release.opened()
            return nil
        }
        let everyJob = Log<String>()
        let ends = Log<String>()
        let progress = Log<Double>()
        let dispatcherToken = dispatcher.observe([.started, .terminal]) { _, event in everyJob.append("\(event)") }
        let endToken = job.observe(.terminal) { _, event in ends.append("\(event)") }
        callbacks.suspend()  // holds every delivery: what is queued stays visible
        dispatcher.add(job)
        await firstReports.opened()
        // Nobody wants progress: only `.started` (for the dispatcher's observer) waits in the mailbox.
        XCTAssertEqual(job.queuedMailCount, 1, "progress that nobody wants was queued")
        let progressToken = job.onProgress { _, value in progress.append(value) }
        listening.open()
        await secondReport.opened()
        XCTAssertEqual(job.queuedMailCount, 2, "progress for a new listener was not queued")
        release.open()
        await eventually { job.state == .finished }
        callbacks.resume()
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(everyJob.all, ["started", "finished"])
        XCTAssertEqual(ends.all, ["finished"])
        XCTAssertEqual(progress.all, [0.6, 1.0])
        withExtendedLifetime((dispatcherToken, endToken, progressToken)) {}
    }

    /// A job that fails on one dispatcher and is started on another while its callbacks are held: each
    /// dispatcher's observers hear the events of the attempts that ran there (the first dispatcher's
    /// heard nothing of the failure, the second's heard it as if it were theirs).
    func testEventsOfAnAttemptGoToTheDispatcherItRanOn() async throws {
        let first = Dispatcher(name: "first")
        let second = Dispatcher(name: "second")
        let callbacks = DispatchQueue(label: "test.moved")
        let runs = Locked(0)
        let job = ClosureJob(callbackQueue: callbacks) { _ in
            if runs.withLock({ $0 += 1; return $0 }) == 1 { throw TestFailure(code: 4) }
            return nil
        }
        let heardByFirst = Log<String>()
        let heardBySecond = Log<String>()
        @Sendable func name(_ event: JobEvent) -> String {
            switch event {
            case .started: "started"
            case .failed: "failed"
            case .finished: "finished"
            default: "other"
            }
        }
        let firstToken = first.observe([.started, .terminal]) { _, event in heardByFirst.append(name(event)) }
        let secondToken = second.observe([.started, .terminal]) { _, event in heardBySecond.append(name(event)) }
        callbacks.suspend()  // the first attempt's events stay queued while the job moves
        first.add(job)
        await eventually { job.state == .failed }
        XCTAssertTrue(second.add(job))
        await eventually { job.state == .finished }
        callbacks.resume()
        await first.waitForAllJobs()
        await second.waitForAllJobs()
        XCTAssertEqual(heardByFirst.all, ["started", "failed"])
        XCTAssertEqual(heardBySecond.all, ["started", "finished"])
        withExtendedLifetime((firstToken, secondToken)) {}
    }

    func testADelegateStillHearsEveryEventWhenObserversAskForFewer() async throws {
        let dispatcher = Dispatcher(name: "kinds.delegate")
        let recorder = Recorder()
        let job = ClosureJob { op in
            op.reportProgress(0.5)
            return nil
        }
        job.addDelegate(recorder)
        let token = dispatcher.observe(.terminal) { _, _ in }
        dispatcher.add(job)
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(recorder.log(of: job), [.started, .progress(0.5), .progress(1), .finished])
        XCTAssertEqual(recorder.allViolations, [])
        _ = token
    }

    func testClosureHandlersSeeEveryKindOfEvent() async throws {
        let dispatcher = Dispatcher(name: "closures")
        let events = Log<String>()
        let job = ClosureJob { op in
            op.reportProgress(0.5)
            throw TestFailure(code: 7)
        }
        let tokens = [
            job.onStart { _ in events.append("start") },
            job.onProgress { _, value in events.append("progress \(value)") },
            job.onFinish { _, _ in events.append("finish") },
            job.onFail { _, error in events.append("fail \((error as? TestFailure)?.code ?? 0)") },
            job.onCancel { _ in events.append("cancel") },
        ]
        dispatcher.add(job)
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(events.all, ["start", "progress 0.5", "fail 7"])
        XCTAssertEqual(job.state, .failed)
        XCTAssertEqual(job.error as? TestFailure, TestFailure(code: 7))
        withExtendedLifetime(tokens) {}
    }
}
