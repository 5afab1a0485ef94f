import Dispatch
import Foundation
import Synchronization
import XCTest

@_spi(YXQueueInternals) @testable import YXQueue

final class ConcurrencyTests: XCTestCase {
    func testRunReturnsTheResultAndThrowsTheError() async throws {
        let dispatcher = Dispatcher(name: "run")
        let ok = try await ClosureJob { _ in "fine" }.run(on: dispatcher)
        XCTAssertEqual(ok as? String, "fine")
        do {
            try await ClosureJob { _ in throw TestFailure(code: 3) }.run(on: dispatcher)
            XCTFail("expected an error")
        } catch {
            XCTAssertEqual(error as? TestFailure, TestFailure(code: 3))
        }
    }

    func testCancellingTheTaskCancelsTheJob() async throws {
        let dispatcher = Dispatcher(name: "task-cancel")
        let job = UntilCanceledJob()
        let task = Task { try await job.run(on: dispatcher) }
        await eventually { job.operation?.started.isOpen == true }
        task.cancel()
        await assertThrowsCancellation { _ = try await task.value }
        XCTAssertEqual(job.state, .canceled)
    }

    func testValueOfAFinishedJobAndOfAJobNotYetStarted() async throws {
        let dispatcher = Dispatcher(name: "value")
        let job = ClosureJob { _ in 5 }
        async let later = job.value  // waits for the first attempt
        try await Task.sleep(nanoseconds: 20_000_000)
        dispatcher.add(job)
        let first = try await later
        let again = try await job.value  // finished: returns at once
        XCTAssertEqual(first as? Int, 5)
        XCTAssertEqual(again as? Int, 5)
    }

    func testEventStreamDeliversTheAttemptInOrderAndEnds() async throws {
        let dispatcher = Dispatcher(name: "stream")
        let job = ClosureJob { op in
            op.reportProgress(0.25)
            try await Task.sleep(nanoseconds: 150_000_000)
            op.reportProgress(0.75)
            return "streamed"
        }
        let events = job.events
        dispatcher.add(job)
        var seen: [String] = []
        for await event in events { seen.append(event.description) }
        XCTAssertEqual(seen, ["started", "progress(0.25)", "progress(0.75)", "progress(1.0)", "finished"])
    }

    func testAbandonedStreamUnregisters() async throws {
        let dispatcher = Dispatcher(name: "stream-abandon")
        let job = ClosureJob { op in
            for index in 1...5 {
                op.reportProgress(Double(index) / 5)
                try await Task.sleep(nanoseconds: 110_000_000)
            }
            return nil
        }
        let events = job.events
        dispatcher.add(job)
        for await event in events {
            if case .progress = event { break }
        }
        // The stream's observer is removed once the iteration ended.
        await eventually { job.core.withLock { $0.observers.isEmpty } }
        await dispatcher.waitForAllJobs()
    }

    /// 10,000 jobs across 3 operation types; 4 threads cancel and restart jobs at random while they run.
    /// Every attempt must end exactly once, callbacks must keep their order, and every job must end in a
    /// terminal state.
    func testStressRandomCancelsAndRestarts() async throws {
        try await stressRandomCancelsAndRestarts { _ in .global() }
    }

    /// The same with every other job's callbacks on one `DirectQueue` (delivered on the threads that end
    /// the jobs when it is idle, else by the thread that holds it or by the queue's own).
    func testStressRandomCancelsAndRestartsWithADirectQueue() async throws {
        let direct = DirectQueue(label: "stress.direct")
        try await stressRandomCancelsAndRestarts { $0 % 2 == 0 ? direct.queue : .global() }
    }

    private func stressRandomCancelsAndRestarts(callbackQueue: (Int) -> DispatchQueue) async throws {
        let dispatcher = Dispatcher(name: "stress")
        let recorder = Recorder()
        let probe = ConcurrencyProbe()
        let limits = ["s1": 2, "s2": 3, "s3": 5]
        for (queue, limit) in limits { dispatcher.setLimit(limit, for: queue) }
        let models = Array(limits.keys)
        let count = 10_000
        let jobs: [ClosureJob] = (0..<count).map { index in
            let model = models[index % models.count]
            return ClosureJob(tag: index, queue: model, callbackQueue: callbackQueue(index)) { op in
                probe.enter(model)
                defer { probe.leave(model) }
                op.reportProgress(0.5)
                if index % 7 == 0 { throw TestFailure(code: index) }
                if index % 5 == 0 { try await Task.sleep(nanoseconds: 200_000) }
                return index
            }
        }
        for job in jobs { job.addDelegate(recorder) }

        let everybodyHere = DispatchGroup()
        let go = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for worker in 0..<4 {
            everybodyHere.enter()
            done.enter()
            Thread.detachNewThread {
                var generator = SystemRandomNumberGenerator()
                everybodyHere.leave()
                go.wait()
                // 3,000 random steps, and on until this worker restarted a job at least once: on a busy
                // machine the steps can all come before any job ended, and a restart needs an ended job.
                var restarted = false
                let deadline = DispatchTime.now() + .seconds(30)
                var step = 0
                while step < 3_000 || (!restarted && DispatchTime.now() < deadline) {
                    let job = jobs[Int.random(in: 0..<count, using: &generator)]
                    switch (step + worker) % 3 {
                    case 0: job.cancel()
                    case 1: if job.restart() { restarted = true }
                    default: dispatcher.cancel(job)
                    }
                    step += 1
                }
                done.leave()
            }
        }
        // Wait for the threads without holding a thread of the cooperative pool (the jobs run there).
        await withCheckedContinuation { everybodyHere.notify(queue: .global(), execute: $0.resume) }
        for worker in 0..<4 { _ = worker; go.signal() }
        for job in jobs { dispatcher.add(job) }
        await withCheckedContinuation { done.notify(queue: .global(), execute: $0.resume) }
        await dispatcher.waitForAllJobs()

        XCTAssertEqual(recorder.allViolations, [])
        for (type, limit) in limits {
            XCTAssertLessThanOrEqual(probe.peak(type), limit)
        }
        var restartedJobs = 0
        for job in jobs {
            let log = recorder.log(of: job)
            let terminals = log.filter(\.isTerminal).count
            XCTAssertEqual(terminals, job.attempt, "\(job): one terminal callback per attempt: \(log)")
            XCTAssertTrue(job.state.isTerminal, "\(job) did not end")
            XCTAssertFalse(job.isActive)
            if job.attempt > 1 { restartedJobs += 1 }
            switch job.state {
            case .finished:
                XCTAssertEqual(job.result as? Int, job.tag)
                XCTAssertEqual(log.last, .finished)
            case .failed:
                XCTAssertEqual(job.tag % 7, 0)
                XCTAssertEqual(log.last, .failed)
            case .canceled:
                XCTAssertEqual(log.last, .canceled)
            default:
                XCTFail("\(job) ended in \(job.state)")
            }
        }
        XCTAssertGreaterThan(restartedJobs, 0, "the stress test exercised restarts")
        XCTAssertTrue(dispatcher.activeJobs.isEmpty)
    }

    /// Observers of some kinds of events, while progress observers come and go on other threads and
    /// jobs are canceled at random: an observer never hears a kind it did not ask for, and each one that
    /// asked for terminal events hears exactly one per job.
    func testStressObserversOfSomeKindsWhileOthersComeAndGo() async throws {
        let dispatcher = Dispatcher(name: "stress-kinds", queues: ["k1": 3, "k2": 4])
        let count = 3_000
        let jobs: [ClosureJob] = (0..<count).map { index in
            ClosureJob(tag: index, queue: index % 2 == 0 ? "k1" : "k2") { op in
                op.reportProgress(0.3)
                if index % 4 == 0 { try await Task.sleep(nanoseconds: 100_000) }
                op.reportProgress(0.6)
                if index % 9 == 0 { throw TestFailure(code: index) }
                return index
            }
        }
        let wrongKinds = Log<String>()
        let dispatcherEnds = Locked<[Int: Int]>([:])
        let ownEnds = Locked<[Int: Int]>([:])
        let dispatcherToken = dispatcher.observe([.started, .terminal]) { job, event in
            switch event {
            case .started: break
            case .finished, .failed, .canceled: dispatcherEnds.withLock { $0[job.tag, default: 0] += 1 }
            case .progress, .retrying: wrongKinds.append("dispatcher observer of start and end heard \(event)")
            }
        }
        let ownTokens = jobs.map { job in
            job.observe(.terminal) { job, event in
                if !event.isTerminal { wrongKinds.append("terminal observer heard \(event)") }
                ownEnds.withLock { $0[job.tag, default: 0] += 1 }
            }
        }

        let churning = DispatchGroup()
        let stop = Atomic<Bool>(false)
        for worker in 0..<2 {
            churning.enter()
            Thread.detachNewThread {
                var generator = SystemRandomNumberGenerator()
                var kept: [JobObservation] = []
                while !stop.load(ordering: .relaxed) {
                    let job = jobs[Int.random(in: 0..<count, using: &generator)]
                    kept.append(job.onProgress { _, value in
                        if value < 0 || value > 1 { wrongKinds.append("progress \(value)") }
                    })
                    if kept.count > 8 { kept.removeFirst().invalidate() }
                    if Int.random(in: 0..<50, using: &generator) == worker { job.cancel() }
                }
                kept.removeAll()
                churning.leave()
            }
        }
        for job in jobs { dispatcher.add(job) }
        await dispatcher.waitForAllJobs()
        stop.store(true, ordering: .relaxed)
        await withCheckedContinuation { churning.notify(queue: .global(), execute: $0.resume) }

        XCTAssertEqual(wrongKinds.all, [])
        let (fromDispatcher, fromJobs) = (dispatcherEnds.withLock { $0 }, ownEnds.withLock { $0 })
        for job in jobs {
            XCTAssertTrue(job.state.isTerminal, "\(job) did not end")
            XCTAssertEqual(fromDispatcher[job.tag], 1, "\(job): terminal events heard by the dispatcher's observer")
            XCTAssertEqual(fromJobs[job.tag], 1, "\(job): terminal events heard by its own observer")
        }
        withExtendedLifetime((dispatcherToken, ownTokens)) {}
    }
}
