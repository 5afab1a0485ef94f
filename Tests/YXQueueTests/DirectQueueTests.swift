import Dispatch
import Foundation
import XCTest

@_spi(YXQueueInternals) @testable import YXQueue

/// `DirectQueue`: work runs on the thread that hands it over when the queue is idle, one item at a
/// time, in order, "on" the dispatch queue; a thread that finds it held never waits.
final class DirectQueueTests: XCTestCase {
    /// The calling thread, as a number that can be compared across threads.
    private static var threadID: ObjectIdentifier { ObjectIdentifier(Thread.current) }

    func testAnIdleQueueRunsWorkOnTheCallingThreadAsItsQueue() {
        let direct = DirectQueue(label: "direct.idle")
        let caller = Self.threadID
        let seen = Log<(thread: ObjectIdentifier, current: Bool)>()
        direct.run {
            // Fails (stops the process) unless the item runs on the dispatch queue, as its callbacks must.
            dispatchPrecondition(condition: .onQueue(direct.queue))
            seen.append((Self.threadID, direct.isCurrent))
        }
        XCTAssertEqual(seen.all.count, 1, "run returned after the item ran")
        XCTAssertEqual(seen.all.first?.thread, caller)
        XCTAssertEqual(seen.all.first?.current, true)
        XCTAssertFalse(direct.isCurrent)
    }

    /// A thread that finds the queue held leaves its work there and returns at once; the holder runs it
    /// next, on its own thread.
    func testAThreadThatFindsTheQueueHeldDoesNotWait() {
        let direct = DirectQueue(label: "direct.held")
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let log = Log<String>()
        let holder = Locked<ObjectIdentifier?>(nil)
        let heldDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            direct.run {
                holder.withLock { $0 = Self.threadID }
                holding.signal()
                release.wait()
                log.append("first")
            }
            heldDone.signal()
        }
        holding.wait()
        let ranOn = Locked<ObjectIdentifier?>(nil)
        direct.run {
            ranOn.withLock { $0 = Self.threadID }
            log.append("second")
        }
        XCTAssertEqual(log.all, [], "returned without waiting for the holder")
        release.signal()
        heldDone.wait()
        XCTAssertEqual(log.all, ["first", "second"])
        XCTAssertEqual(ranOn.withLock { $0 }, holder.withLock { $0 }, "the holder ran what was left with it")
    }

    /// Work handed over from inside an item runs after that item, never nested in it.
    func testWorkFromInsideAnItemRunsAfterIt() {
        let direct = DirectQueue(label: "direct.nested")
        let log = Log<String>()
        direct.run {
            direct.run { log.append("inner run") }
            direct.async { log.append("inner async") }
            log.append("outer")
        }
        XCTAssertEqual(log.all, ["outer", "inner run", "inner async"], "the caller ran what was left too")
    }

    /// `async` never runs on the calling thread.
    func testAsyncRunsOnTheQueuesOwnThread() {
        let direct = DirectQueue(label: "direct.async")
        let caller = Self.threadID
        let ran = DispatchSemaphore(value: 0)
        let thread = Locked<ObjectIdentifier?>(nil)
        direct.async {
            dispatchPrecondition(condition: .onQueue(direct.queue))
            thread.withLock { $0 = Self.threadID }
            ran.signal()
        }
        ran.wait()
        XCTAssertNotEqual(thread.withLock { $0 }, caller)
    }

    /// A block given to the dispatch queue directly already holds it: `run` from there runs the work
    /// right there (a `queue.sync` would deadlock).
    func testRunFromABlockOfTheDispatchQueueItself() {
        let direct = DirectQueue(label: "direct.own")
        let log = Log<String>()
        direct.queue.sync {
            direct.run { log.append("ran") }
        }
        XCTAssertEqual(log.all, ["ran"])
    }

    /// One thread runs at most `runBudget` items in a row; the queue's own thread takes the rest, in
    /// order.
    func testALongLineGoesOnOnTheQueuesThread() {
        let direct = DirectQueue(label: "direct.budget")
        let caller = Self.threadID
        let count = DirectQueue.runBudget * 3
        let log = Log<(index: Int, thread: ObjectIdentifier)>()
        let all = DispatchGroup()
        for _ in 0..<count { all.enter() }
        direct.run {
            for index in 0..<count {
                direct.run {
                    log.append((index, Self.threadID))
                    all.leave()
                }
            }
        }
        XCTAssertEqual(all.wait(timeout: .now() + 30), .success)
        let entries = log.all
        XCTAssertEqual(entries.map(\.index), Array(0..<count), "in order")
        let onCaller = entries.filter { $0.thread == caller }.count
        XCTAssertEqual(onCaller, DirectQueue.runBudget - 1, "the first item and budget - 1 more on the caller")
    }

    /// Many threads hand over work at random through `run` and `async`: items never overlap, and each
    /// thread's items run in the order it handed them over. (Under Thread Sanitizer, the unlocked counter
    /// below is a race if two items ever run at once.)
    func testItemsNeverOverlapAndKeepEachThreadsOrder() {
        let direct = DirectQueue(label: "direct.stress")
        final class Unlocked: @unchecked Sendable {
            var inside = 0
            var overlaps = 0
            var lastSeen: [Int] = Array(repeating: -1, count: 8)
            var outOfOrder = 0
            var ran = 0
        }
        let shared = Unlocked()
        let threads = 8
        let perThread = 3_000
        let everybodyHere = DispatchGroup()
        let go = DispatchSemaphore(value: 0)
        let handedOver = DispatchGroup()
        for thread in 0..<threads {
            everybodyHere.enter()
            handedOver.enter()
            Thread.detachNewThread {
                var generator = SystemRandomNumberGenerator()
                everybodyHere.leave()
                go.wait()
                for sequence in 0..<perThread {
                    let item: @Sendable () -> Void = {
                        shared.inside += 1
                        if shared.inside != 1 { shared.overlaps += 1 }
                        if shared.lastSeen[thread] != sequence - 1 { shared.outOfOrder += 1 }
                        shared.lastSeen[thread] = sequence
                        shared.ran += 1
                        shared.inside -= 1
                    }
                    if Bool.random(using: &generator) { direct.run(item) } else { direct.async(item) }
                }
                handedOver.leave()
            }
        }
        everybodyHere.wait()
        for _ in 0..<threads { go.signal() }
        handedOver.wait()
        let finished = DispatchSemaphore(value: 0)
        direct.async { finished.signal() }  // after every item handed over before it
        finished.wait()
        direct.queue.sync {
            XCTAssertEqual(shared.ran, threads * perThread)
            XCTAssertEqual(shared.overlaps, 0)
            XCTAssertEqual(shared.outOfOrder, 0)
        }
    }

    /// The queue does not keep itself alive through its dispatch queue.
    func testTheDispatchQueueDoesNotKeepItAlive() {
        weak var weakDirect: DirectQueue?
        var queue: DispatchQueue?
        do {
            let direct = DirectQueue(label: "direct.lifetime")
            weakDirect = direct
            queue = direct.queue
        }
        XCTAssertNil(weakDirect)
        XCTAssertNotNil(queue)
        XCTAssertNil(DirectQueue.owning(queue!))
    }

    // MARK: - Jobs

    /// Stands in for a transfer engine: one thread that completes what it is handed.
    final class EngineJob: Job, @unchecked Sendable {
        override var queue: String { "engine" }
        override class var operationClass: QueueOperation.Type { EngineOperation.self }
        static let engine = EngineThread()
    }

    /// One thread of its own that runs what it is given, in order (a serial dispatch queue may run its
    /// blocks on a different pool thread each time it drains).
    final class EngineThread: Sendable {
        private let work = Locked<[@Sendable () -> Void]>([])
        private let ready = DispatchSemaphore(value: 0)
        private let started = DispatchSemaphore(value: 0)
        private let identity = Locked<ObjectIdentifier?>(nil)

        init() {
            Thread.detachNewThread { [work, ready, started, identity] in
                identity.withLock { $0 = DirectQueueTests.threadID }
                started.signal()
                while true {
                    ready.wait()
                    let next = work.withLock { $0.removeFirst() }
                    next()
                }
            }
            started.wait()
        }

        var thread: ObjectIdentifier? { identity.withLock { $0 } }

        func async(_ item: @escaping @Sendable () -> Void) {
            work.withLock { $0.append(item) }
            ready.signal()
        }
    }

    final class EngineOperation: QueueOperation, @unchecked Sendable {
        override var executesInline: Bool { true }
        override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
            let fail = job.map { $0.tag < 0 && $0.attempt == 1 } ?? false
            let direct = job.flatMap { DirectQueue.owning($0.callbackQueue) }
            EngineJob.engine.async {
                // Completes once no thread holds the job's callback queue, so that which thread delivers
                // the events does not depend on how the threads happen to be scheduled.
                if let direct {
                    let deadline = DispatchTime.now() + 10
                    while direct.isHeld && DispatchTime.now() < deadline { usleep(50) }
                }
                completion(fail ? .failure(TestFailure(code: 1)) : .success(nil))
            }
        }
    }

    /// A job whose callback queue is a `DirectQueue`'s hears its events on the thread that completed its
    /// operation, in order; an observer that adds the next job there makes a chain with no thread hop.
    func testAJobsEventsArriveOnTheThreadThatCompletedIt() {
        let dispatcher = Dispatcher(name: "direct.jobs", queues: ["engine": 2])
        let direct = DirectQueue(label: "direct.jobs.events")
        let log = Log<(tag: Int, event: String, thread: ObjectIdentifier)>()
        let chain = 100
        let tokens = Locked<[JobObservation]>([])
        let done = DispatchSemaphore(value: 0)
        @Sendable func add(_ tag: Int) {
            let job = EngineJob(tag: tag, callbackQueue: direct.queue)
            let token = job.observe([.started, .terminal]) { job, event in
                dispatchPrecondition(condition: .onQueue(direct.queue))
                log.append((job.tag, event.isTerminal ? "ended" : "started", DirectQueueTests.threadID))
                guard event.isTerminal else { return }
                if job.tag + 1 < chain { add(job.tag + 1) } else { done.signal() }
            }
            tokens.withLock { $0.append(token) }
            dispatcher.add(job)
        }
        direct.run { add(0) }
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        dispatcher.waitUntilAllJobsAreFinished()
        let entries = log.all
        XCTAssertEqual(entries.map(\.tag), (0..<chain).flatMap { [$0, $0] })
        XCTAssertEqual(entries.map(\.event), Array(repeating: ["started", "ended"], count: chain).flatMap { $0 })
        // This thread added the first job and delivered its start while it held the queue. Every later
        // event came on the engine's thread, which found the queue idle each time: the end of job N
        // (delivered there), the start of job N + 1 (added there, inside that callback), and so on.
        let engine = EngineJob.engine.thread
        XCTAssertEqual(entries.first?.thread, Self.threadID)
        let elsewhere = entries.dropFirst().filter { $0.thread != engine }.count
        XCTAssertEqual(elsewhere, 0, "\(elsewhere) events elsewhere than on the engine's thread")
    }

    /// An observer may restart its job from inside its failure callback, delivered on the completing
    /// thread: the job runs again and finishes, and every callback arrives once, in order.
    func testRestartFromInsideAFailureCallback() {
        let dispatcher = Dispatcher(name: "direct.restart", queues: ["engine": 1])
        let direct = DirectQueue(label: "direct.restart.events")
        let job = EngineJob(tag: -1, callbackQueue: direct.queue)  // its first attempt fails
        let log = Log<String>()
        let finished = DispatchSemaphore(value: 0)
        let token = job.observe { job, event in
            switch event {
            case .started: log.append("started \(job.attempt)")
            case .failed:
                log.append("failed")
                XCTAssertTrue(job.restart())
            case .finished:
                log.append("finished \(job.attempt)")
                finished.signal()
            case .progress: break
            default: log.append("\(event)")
            }
        }
        dispatcher.add(job)
        XCTAssertEqual(finished.wait(timeout: .now() + 30), .success)
        dispatcher.waitUntilAllJobsAreFinished()
        XCTAssertEqual(log.all, ["started 1", "failed", "started 2", "finished 2"])
        XCTAssertEqual(job.state, .finished)
        _ = token
    }
}
