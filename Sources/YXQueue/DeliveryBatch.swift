import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Hand-offs to callback queues, held back while a thread runs a batch of work and made after it:
/// one per callback queue instead of one per job.
///
/// A transfer engine that ends several downloads in one turn wakes the thread of their callback queue
/// once, not once per download. Each job's events keep their order; jobs are delivered in the order
/// in which they asked, and no later than the end of the batch.
///
/// ```swift
/// DeliveryBatch.collecting {
///     for transfer in finished { transfer.complete() }   // jobs end here; their events wait
/// }                                                      // one `async` per callback queue here
/// ```
package enum DeliveryBatch {
    final class Pending {
        var jobs: [Job] = []
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// The batch open on this thread, if any.
    static var current: Pending? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        return Unmanaged<Pending>.fromOpaque(pointer).takeUnretainedValue()
    }

    /// Runs `body`; the callback-queue hand-offs that jobs ask for on this thread meanwhile are made
    /// after it. Nested calls join the outer batch.
    package static func collecting<T>(_ body: () throws -> T) rethrows -> T {
        if current != nil { return try body() }
        let pending = Pending()
        pthread_setspecific(key, Unmanaged.passUnretained(pending).toOpaque())
        defer {
            pthread_setspecific(key, nil)
            flush(pending.jobs)
        }
        return try body()
    }

    private static func flush(_ jobs: [Job]) {
        guard !jobs.isEmpty else { return }
        if jobs.count == 1 {
            let job = jobs[0]
            job.callbackQueue.async { job.drainMailbox() }
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
            group.queue.async { for job in members { job.drainMailbox() } }
        }
    }
}
