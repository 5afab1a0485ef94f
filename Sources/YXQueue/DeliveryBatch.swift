import Dispatch

/// Hand-offs to callback queues, held back while a thread runs a batch of work and made after it:
/// one per callback queue instead of one per job.
///
/// A transfer engine that ends several downloads in one turn wakes the thread of their callback queue
/// once, not once per download. Each job's events keep their order; jobs are delivered in the order
/// in which they asked, and no later than the end of the batch. The open batch lives in the thread's
/// ``ThreadLoop`` context.
///
/// ```swift
/// DeliveryBatch.collecting {
///     for transfer in finished { transfer.complete() }   // jobs end here; their events wait
/// }                                                      // one `async` per callback queue here
/// ```
package enum DeliveryBatch {
    /// Runs `body`; the callback-queue hand-offs that jobs ask for on this thread meanwhile are made
    /// after it. Nested calls join the outer batch.
    package static func collecting<T>(_ body: () throws -> T) rethrows -> T {
        let context = ThreadLoop.current
        if context.deliveryBatch != nil { return try body() }
        context.deliveryBatch = []
        defer {
            let jobs = context.deliveryBatch ?? []
            context.deliveryBatch = nil
            flush(jobs)
        }
        return try body()
    }

    /// Notes `job` in the batch open on this thread; false when none is open.
    static func hold(_ job: Job) -> Bool {
        guard let context = ThreadLoop.existing, context.deliveryBatch != nil else { return false }
        context.deliveryBatch?.append(job)
        return true
    }

    private static func flush(_ jobs: [Job]) {
        guard let first = jobs.first?.callbackQueue else { return }
        // Usually every job has the same callback queue: one hand-off, no grouping.
        if jobs.allSatisfy({ $0.callbackQueue === first }) {
            first.async { for job in jobs { job.drain() } }
            return
        }
        // Grouped by callback queue, each group in the order of asking.
        var groups: [(queue: DispatchQueue, jobs: [Job])] = []
        for job in jobs {
            if let index = groups.firstIndex(where: { $0.queue === job.callbackQueue }) {
                groups[index].jobs.append(job)
            } else {
                groups.append((job.callbackQueue, [job]))
            }
        }
        for group in groups {
            let members = group.jobs
            group.queue.async { for job in members { job.drain() } }
        }
    }
}
