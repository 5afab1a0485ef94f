import Dispatch

/// Hand-offs to callback queues, held back while a thread runs a batch of work and made after it:
/// one per callback queue instead of one per job.
///
/// A transfer engine that ends several downloads in one turn wakes the thread of their callback queue
/// once, not once per download. Each job's events keep their order; jobs are delivered in the order
/// in which they asked, and no later than the end of the batch. The open batch lives in the thread's
/// ``ThreadLoop`` context.
///
/// The completion of every operation is a batch too (``QueueOperation``): the events it causes are
/// handed over after the executor is done with it. A callback queue that is a ``DirectQueue``'s is
/// then entered on this thread when it is idle (``DirectQueue/run(_:)``): the end of a batch is a point
/// where this thread holds no lock and is in the middle of nothing, so user callbacks may run there.
///
/// ```swift
/// DeliveryBatch.collecting {
///     for transfer in finished { transfer.complete() }   // jobs end here; their events wait
/// }                                                      // one hand-off per callback queue here
/// ```
package enum DeliveryBatch {
    /// Runs `body`; the callback-queue hand-offs that jobs ask for on this thread meanwhile are made
    /// after it. Nested calls join the outer batch.
    package static func collecting<T>(_ body: () throws -> T) rethrows -> T {
        let context = ThreadLoop.current
        if context.pointee.batchIsOpen { return try body() }
        context.pointee.batchIsOpen = true
        defer {
            context.pointee.batchIsOpen = false
            if let first = context.pointee.batchFirst {
                context.pointee.batchFirst = nil
                var more: [Job] = []
                if !context.pointee.batchMore.isEmpty { swap(&more, &context.pointee.batchMore) }
                flush(first, more)
            }
        }
        return try body()
    }

    /// Notes `job` in the batch open on this thread; false when none is open.
    static func hold(_ job: Job) -> Bool {
        guard let context = ThreadLoop.existing, context.pointee.batchIsOpen else { return false }
        if context.pointee.batchFirst == nil {
            context.pointee.batchFirst = job  // most batches hold one job: no array
        } else {
            context.pointee.batchMore.append(job)
        }
        return true
    }

    private static func flush(_ first: Job, _ more: [Job]) {
        // Usually every job has the same callback queue: one hand-off, no grouping.
        let queue = first.callbackQueue
        if more.allSatisfy({ $0.callbackQueue === queue }) {
            let drains: @Sendable () -> Void = {
                first.drain()
                for job in more { job.drain() }
            }
            DirectQueue.hand(drains, to: queue, mayRunHere: true)
            return
        }
        // Grouped by callback queue, each group in the order of asking.
        var groups: [(queue: DispatchQueue, jobs: [Job])] = [(queue, [first])]
        for job in more {
            if let index = groups.firstIndex(where: { $0.queue === job.callbackQueue }) {
                groups[index].jobs.append(job)
            } else {
                groups.append((job.callbackQueue, [job]))
            }
        }
        for group in groups {
            let members = group.jobs
            DirectQueue.hand({ for job in members { job.drain() } }, to: group.queue, mayRunHere: true)
        }
    }
}
