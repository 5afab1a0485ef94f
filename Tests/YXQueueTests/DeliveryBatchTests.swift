import Dispatch
import XCTest

@testable import YXQueue

/// Events of jobs that end inside a `DeliveryBatch` reach their callback queue after it, one hand-off
/// per queue, in order.
final class DeliveryBatchTests: XCTestCase {
    /// One operation that completes in `execute`, on the thread that submits it.
    final class InlineJob: Job, @unchecked Sendable {
        override var queue: String { "inline" }
        override class var operationClass: QueueOperation.Type { InlineOperation.self }
    }

    final class InlineOperation: QueueOperation, @unchecked Sendable {
        override var executesInline: Bool { true }
        override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
            completion(.success(nil))
        }
    }

    func testEventsOfJobsEndedInABatchArriveAfterItInOrder() {
        let dispatcher = Dispatcher(name: "batch", queues: ["inline": 8])
        let first = DispatchQueue(label: "batch.first")
        let second = DispatchQueue(label: "batch.second")
        let log = Log<String>()
        let jobs = (0..<6).map { InlineJob(tag: $0, callbackQueue: $0 % 2 == 0 ? first : second) }
        let tokens = jobs.map { job in
            job.observe([.started, .terminal]) { job, event in
                log.append("\(job.tag) \(event.isTerminal ? "ended" : "started")")
            }
        }
        DeliveryBatch.collecting {
            for job in jobs { dispatcher.add(job) }
            XCTAssertEqual(jobs.map(\.state), Array(repeating: .finished, count: 6), "ended on this thread")
            // Had anything been handed to the callback queues, it would run before these empty blocks.
            first.sync {}
            second.sync {}
            XCTAssertEqual(log.all, [], "nothing is delivered during the batch")
            DeliveryBatch.collecting {}  // a nested batch joins this one: it delivers nothing either
            first.sync {}
            XCTAssertEqual(log.all, [])
        }
        first.sync {}
        second.sync {}
        let delivered = log.all
        XCTAssertEqual(delivered.count, 12, "\(delivered)")
        for parity in 0..<2 {
            // Each queue has its jobs' events, job by job, each job's start before its end.
            let expected = jobs.filter { $0.tag % 2 == parity }.flatMap { ["\($0.tag) started", "\($0.tag) ended"] }
            XCTAssertEqual(delivered.filter { Int($0.prefix(1))! % 2 == parity }, expected)
        }
        dispatcher.waitUntilAllJobsAreFinished()
        _ = tokens
    }

    /// Jobs of one callback queue (the usual case) are handed over together, in the order they ended.
    func testJobsOfOneQueueArriveTogetherInOrder() {
        let dispatcher = Dispatcher(name: "one-queue", queues: ["inline": 8])
        let callbacks = DispatchQueue(label: "one-queue.callbacks")
        let log = Log<Int>()
        let jobs = (0..<5).map { InlineJob(tag: $0, callbackQueue: callbacks) }
        let tokens = jobs.map { job in job.observe(.terminal) { job, _ in log.append(job.tag) } }
        DeliveryBatch.collecting {
            for job in jobs { dispatcher.add(job) }
            callbacks.sync {}
            XCTAssertEqual(log.all, [])
        }
        callbacks.sync {}
        XCTAssertEqual(log.all, [0, 1, 2, 3, 4])
        dispatcher.waitUntilAllJobsAreFinished()
        _ = tokens
    }

    func testOutsideABatchEventsAreHandedOverAtOnce() {
        let dispatcher = Dispatcher(name: "no-batch", queues: ["inline": 8])
        let callbacks = DispatchQueue(label: "no-batch.callbacks")
        let log = Log<Int>()
        let job = InlineJob(tag: 7, callbackQueue: callbacks)
        let token = job.observe(.terminal) { job, _ in log.append(job.tag) }
        dispatcher.add(job)
        callbacks.sync {}
        XCTAssertEqual(log.all, [7])
        dispatcher.waitUntilAllJobsAreFinished()
        _ = token
    }
}
