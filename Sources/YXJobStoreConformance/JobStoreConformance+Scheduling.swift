import Foundation
import YXJobStore
@_spi(YXQueueInternals) import YXQueue

extension JobStoreConformance {
    /// A failed attempt comes back after its back-off and not before; a worker retries a failing handler
    /// with growing waits until it succeeds; a job that keeps failing fails for good after its attempts.
    public func retriesWithBackoff() async throws {
        try await withStore { store in
            // Store level: the retry time is recorded, and the claim honours it.
            var options = JobOptions()
            options.retry = RetryPolicy(retries: 2, initialDelay: 0.3, jitter: 0, scope: .allErrors)
            let id = try await store.enqueue(JobRequest(name: "conformance.retry", options: options)).id
            let first = try unwrap(try await claimOne(store, "conformance.retry", owner: "w"), "the first claim")
            _ = try await store.complete([
                JobCompletion(lease: first.lease, outcome: .retry(after: .milliseconds(300), error: "boom"))
            ])
            let waiting = try await record(store, id)
            try expectEqual(waiting.state, .available, "state after a failed attempt")
            try expectEqual(waiting.failures, 1, "failures")
            try expectEqual(waiting.message, "boom", "the recorded error")
            let started = try unwrap(waiting.startedAt, "the first start")
            try expect(
                waiting.readyAt.timeIntervalSince(started) >= 0.3,
                "the retry is due 300 ms after the failure at the earliest (start \(started), due \(waiting.readyAt))"
            )
            var second: ClaimedJob?
            try await waitUntil("the retry is claimable") {
                second = try await claimOne(store, "conformance.retry", owner: "w")
                return second != nil
            }
            try expectEqual(second?.attempt, 2, "attempt of the retry")
            let retried = try await record(store, id)
            try expect(
                try unwrap(retried.startedAt, "the second start") >= waiting.readyAt,
                "the retry started at its due time or later"
            )

            // Worker level: two failures, then success; the waits grow.
            let starts = Locked<[ContinuousClock.Instant]>([])
            var registry = JobRegistry()
            registry.register("conformance.flaky") { _, context in
                starts.withLock { $0.append(.now) }
                if context.attempt < 3 { throw ConformanceError("attempt \(context.attempt) fails") }
            }
            registry.register("conformance.hopeless") { _, _ in throw ConformanceError("always fails") }
            var flakyOptions = JobOptions()
            flakyOptions.retry = RetryPolicy(retries: 4, initialDelay: 0.2, jitter: 0, scope: .allErrors)
            var hopelessOptions = JobOptions()
            hopelessOptions.retry = RetryPolicy(retries: 1, initialDelay: 0.05, jitter: 0, scope: .allErrors)
            let flaky = try await store.enqueue(JobRequest(name: "conformance.flaky", options: flakyOptions)).id
            let hopeless = try await store.enqueue(JobRequest(name: "conformance.hopeless", options: hopelessOptions)).id
            let worker = startWorker(store, registry)
            try await waitUntil("the flaky job succeeds and the hopeless one fails") {
                try await states(store, [flaky, hopeless]) == [.succeeded, .failed]
            }
            try await worker.stop()
            let flakyRecord = try await record(store, flaky)
            try expectEqual(flakyRecord.attempt, 3, "attempts of the flaky job")
            try expectEqual(flakyRecord.failures, 2, "failures of the flaky job")
            let times = starts.withLock { $0 }
            try expectEqual(times.count, 3, "runs of the flaky job")
            try expect(times[1] - times[0] >= .milliseconds(200), "first back-off ≥ 200 ms: \(times[1] - times[0])")
            try expect(times[2] - times[1] >= .milliseconds(400), "second back-off ≥ 400 ms: \(times[2] - times[1])")
            let hopelessRecord = try await record(store, hopeless)
            try expectEqual(hopelessRecord.failures, 2, "failures of the hopeless job")
            try expectEqual(hopelessRecord.attempt, 2, "attempts of the hopeless job")
            try expect(
                hopelessRecord.message?.contains("always fails") == true,
                "the failure keeps the error: \(hopelessRecord.message ?? "")"
            )
        }
    }

    /// A job given back for later (``JobRelease`` with a delay) is not claimed before its delay, and the
    /// attempt does not count as a failure; a release without a delay is claimable at once, and one with
    /// an absurd delay is kept (not an overflow).
    public func releaseForLater() async throws {
        try await withStore { store in
            // Store level.
            let id = try await store.enqueue(JobRequest(name: "conformance.release")).id
            let first = try unwrap(try await claimOne(store, "conformance.release", owner: "w"), "the first claim")
            // Two seconds: the claim below, right after, comes before it even on a loaded machine.
            let releasing = Date()
            _ = try await store.complete([JobCompletion(lease: first.lease, outcome: .released(after: .seconds(2)))])
            let waiting = try await record(store, id)
            try expectEqual(waiting.state, .available, "state after the release")
            try expectEqual(waiting.failures, 0, "failures after the release")
            try expectEqual(waiting.owner, nil, "owner after the release")
            try expect(
                waiting.readyAt.timeIntervalSince(releasing) > 1.99,
                "the job is due 2 s after the release (released at \(releasing) or later, due \(waiting.readyAt))"
            )
            try expect(try await claimOne(store, "conformance.release", owner: "w") == nil, "claimed before its delay")
            var second: ClaimedJob?
            try await waitUntil("the released job is claimable after its delay") {
                second = try await claimOne(store, "conformance.release", owner: "w")
                return second != nil
            }
            try expect(Date() >= waiting.readyAt, "claimed at \(Date()), due \(waiting.readyAt)")
            let again = try unwrap(second, "the second claim")
            _ = try await store.complete([JobCompletion(lease: again.lease, outcome: .released(after: .zero))])
            let third = try unwrap(try await claimOne(store, "conformance.release", owner: "w"), "a claim at once")
            _ = try await store.complete([JobCompletion(lease: third.lease, outcome: .released(after: .seconds(Int64.max)))])
            let far = try await record(store, id)
            try expectEqual(far.state, .available, "state after a release for ever")
            try expect(far.readyAt > Date().addingTimeInterval(86_400 * 365), "due in years: \(far.readyAt)")

            // Worker level: the handler gives its job back once, for 300 ms; it runs again after that and
            // succeeds, with no failure counted.
            let starts = Locked<[ContinuousClock.Instant]>([])
            var registry = JobRegistry()
            registry.register("conformance.busy") { _, context in
                starts.withLock { $0.append(.now) }
                if context.attempt == 1 { throw JobRelease("busy elsewhere", after: .milliseconds(300)) }
            }
            let busy = try await store.enqueue(JobRequest(name: "conformance.busy")).id
            let worker = startWorker(store, registry)
            try await waitUntil("the busy job succeeds") { try await record(store, busy).state == .succeeded }
            try await worker.stop()
            let busyRecord = try await record(store, busy)
            try expectEqual(busyRecord.attempt, 2, "attempts of the busy job")
            try expectEqual(busyRecord.failures, 0, "failures of the busy job")
            let times = starts.withLock { $0 }
            try expectEqual(times.count, 2, "runs of the busy job")
            try expect(times[1] - times[0] >= .milliseconds(300), "the second run ≥ 300 ms after the first: \(times[1] - times[0])")
        }
    }

    /// A job does not start before its not-before time: one far in the future is never claimed, one a
    /// little ahead is claimed at its time or later.
    public func notBefore() async throws {
        try await withStore { store in
            var far = JobOptions()
            far.notBefore = Date().addingTimeInterval(3600)
            var soon = JobOptions()
            let soonDate = Date().addingTimeInterval(1)
            soon.notBefore = soonDate
            let results = try await store.enqueue([
                JobRequest(name: "conformance.later", options: far),
                JobRequest(name: "conformance.later", options: soon),
                JobRequest(name: "conformance.later"),
            ])
            let (farID, soonID, nowID) = (results[0].id, results[1].id, results[2].id)
            let soonRecord = try await record(store, soonID)
            try expect(
                abs(soonRecord.readyAt.timeIntervalSince(soonDate)) < 0.01,
                "the stored not-before time \(soonRecord.readyAt) is the one given, \(soonDate)"
            )
            let first = try await store.claim(
                ClaimRequest(owner: "w", names: .only(["conformance.later"]), limit: 10, leaseDuration: .seconds(30))
            )
            try expect(first.contains { $0.id == nowID }, "the job without not-before is claimed at once")
            try expect(!first.contains { $0.id == farID }, "the job an hour ahead is not claimed")
            var claimedSoon = first.first { $0.id == soonID }
            try await waitUntil("the job one second ahead is claimable") {
                if claimedSoon == nil { claimedSoon = try await claimOne(store, "conformance.later", owner: "w") }
                return claimedSoon != nil
            }
            try expectEqual(claimedSoon?.id, soonID, "the second claim")
            let started = try unwrap(try await record(store, soonID).startedAt, "its start")
            try expect(started >= soonRecord.readyAt, "it started at \(started), not before \(soonRecord.readyAt)")
            let delay = try unwrap(try await store.delayUntilNextJob(names: .only(["conformance.later"])), "next delay")
            try expect(delay > .seconds(3000), "the next job is an hour away: \(delay)")
            try expectEqual(try await record(store, farID).state, .available, "the far job stays available")
        }
    }

    /// Ready jobs are claimed by priority (larger first), then in enqueue order.
    public func priorities() async throws {
        try await withStore { store in
            let priorities = [0, 5, -1, 10, 5]
            let results = try await store.enqueue(
                priorities.map { JobRequest(name: "conformance.priority", options: JobOptions(priority: $0)) }
            )
            let ids = results.map(\.id)
            var order: [JobID] = []
            while let job = try await claimOne(store, "conformance.priority", owner: "w") {
                order.append(job.id)
            }
            try expectEqual(order, [ids[3], ids[1], ids[4], ids[0], ids[2]], "claim order")

            let again = try await store.enqueue(
                priorities.map { JobRequest(name: "conformance.priority2", options: JobOptions(priority: $0)) }
            ).map(\.id)
            let batch = try await store.claim(
                ClaimRequest(owner: "w", names: .only(["conformance.priority2"]), limit: 3, leaseDuration: .seconds(30))
            )
            try expectEqual(batch.map(\.id), [again[3], again[1], again[4]], "a batch claim takes the first three")
        }
    }

    /// A job's own timeout cancels its handler and counts as a failed attempt, unlike the lease.
    public func jobTimeout() async throws {
        try await withStore { store in
            var options = JobOptions()
            options.timeout = .milliseconds(300)
            options.retry = .never
            let id = try await store.enqueue(JobRequest(name: "conformance.slow", options: options)).id
            var registry = JobRegistry()
            registry.register("conformance.slow") { _, _ in
                while true { try await Task.sleep(for: .seconds(3600)) }
            }
            let worker = startWorker(store, registry)
            try await waitUntil("the slow job fails") { try await store.job(id)?.state == .failed }
            try await worker.stop()
            let record = try await record(store, id)
            try expect(record.message?.contains("timed out") == true, "the failure says timed out: \(record.message ?? "")")
            try expectEqual(record.leaseExpiries, 0, "expired leases (the timeout is not a lease)")
        }
    }
}
