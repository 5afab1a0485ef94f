import Foundation
import YXJobStore
@_spi(YXQueueInternals) import YXQueue

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension JobStoreConformance {
    /// A process enqueues jobs and is killed (SIGKILL) right after `enqueue` returned: the jobs are in the
    /// store, unclaimed, and another worker runs them.
    public func enqueueThenCrashBeforeClaim() async throws {
        let process = try TestWorkerProcess(
            ["enqueue-and-crash"] + harness.workerArguments + ["--name", "conformance.noop", "--count", "5"],
            logFolder: logFolder
        )
        let exit = try await process.waitForExit()
        try expectEqual(exit, .signaled(SIGKILL), "how the enqueuing process ended (\(process.errorOutput))")
        let ids = process.output.split(separator: "\n").compactMap { line -> JobID? in
            guard line.hasPrefix("enqueued ") else { return nil }
            return Int64(line.dropFirst("enqueued ".count)).map { JobID(rawValue: $0) }
        }
        try expectEqual(ids.count, 5, "jobs the killed process reported enqueued")
        try await withStore { store in
            for id in ids {
                let record = try await record(store, id)
                try expectEqual(record.state, .available, "state of job \(id) after the crash")
                try expectEqual(record.attempt, 0, "attempts of job \(id) before any claim")
            }
            var registry = JobRegistry()
            registry.register("conformance.noop") { _, _ in }
            let worker = startWorker(store, registry)
            try await waitUntil("the crashed process's jobs succeed") {
                try await states(store, ids).allSatisfy { $0 == .succeeded }
            }
            try await worker.stop()
            for id in ids {
                try expectEqual(try await record(store, id).attempt, 1, "attempts of job \(id)")
            }
        }
    }

    /// A worker process claims a job and is killed (SIGKILL) while it runs: once the lease expires, a
    /// worker of this process recovers the job and runs it to the end (attempt 2, one lease expiry).
    public func claimThenWorkerKilled() async throws {
        try await withStore { store in
            let id = try await store.enqueue(JobRequest(name: "conformance.block")).id
            let process = try startWorkerProcess(names: ["conformance.block"], extra: ["--recovery-bound-ms", "1500"])
            try await waitUntil("the worker process runs the job") {
                try await store.job(id)?.state == .running
            }
            let owner = try await record(store, id).owner ?? ""
            try expect(owner.contains(":\(process.pid):"), "the owner \(owner) is process \(process.pid)")
            process.send(SIGKILL)
            try expectEqual(try await process.waitForExit(), .signaled(SIGKILL), "how the worker process ended")

            var registry = JobRegistry()
            registry.register("conformance.block") { _, _ in }
            // This worker's own bound does not matter: it recovers the killed process's expired lease.
            let worker = startWorker(store, registry)
            try await waitUntil("the killed worker's job succeeds here") {
                try await store.job(id)?.state == .succeeded
            }
            try await worker.stop()
            let record = try await record(store, id)
            try expectEqual(record.attempt, 2, "attempts")
            try expectEqual(record.leaseExpiries, 1, "expired leases")
            try expectEqual(record.failures, 1, "failed attempts (the expired lease counts)")
        }
    }

    /// A scenario that fails half-way leaves its worker process running a job, with its connections
    /// open: the harness's clean-up kills it (and waits until it is reaped) before it deletes the store,
    /// so the deletion never waits on that process and nothing outlives the test.
    public func cleanupKillsSurvivingWorkers() async throws {
        let process = try await withStore { store in
            let id = try await store.enqueue(JobRequest(name: "conformance.block")).id
            let process = try startWorkerProcess(names: ["conformance.block"])
            try await waitUntil("the worker process runs the job") {
                try await store.job(id)?.state == .running
            }
            return process
        }
        try expectEqual(process.exitStatus, nil, "the worker process runs before the clean-up")
        try await harness.cleanup()
        try expectEqual(process.exitStatus, .signaled(SIGKILL), "how the surviving worker process ended")
    }

    /// A lease expires; another worker claims the job; the first worker's outcome, heartbeat and
    /// progress are refused. An expired lease on the last allowed attempt fails the job.
    public func leaseExpiryRefusesStaleOutcome() async throws {
        try await withStore { store in
            let id = try await store.enqueue(JobRequest(name: "conformance.lease")).id
            let first = try unwrap(
                try await claimOne(store, "conformance.lease", owner: "worker-a", lease: .milliseconds(200)),
                "the first claim"
            )
            try expectEqual(first.attempt, 1, "first attempt number")
            try expect(
                try await claimOne(store, "conformance.lease", owner: "worker-b") == nil,
                "a running job cannot be claimed by another worker"
            )
            try await waitUntil("the lease expired and the job was recovered") {
                try await store.recoverExpiredLeases() > 0
            }
            let second = try unwrap(try await claimOne(store, "conformance.lease", owner: "worker-b"), "the second claim")
            try expectEqual(second.attempt, 2, "second attempt number")

            let refused = try await store.complete([JobCompletion(lease: first.lease, outcome: .succeeded)])
            try expectEqual(refused, [first.lease], "outcomes refused for the stale lease")
            let beat = try await store.heartbeat(
                [JobHeartbeat(lease: first.lease, progress: JobProgress(fraction: 0.9))],
                leaseDuration: .seconds(30)
            )
            try expectEqual(beat.lost, [first.lease], "heartbeats refused for the stale lease")
            let check = try await store.checkLeases([first.lease, second.lease])
            try expectEqual(check.lost, [first.lease], "leases lost")
            var record = try await record(store, id)
            try expectEqual(record.state, .running, "state while worker-b runs it")
            try expectEqual(record.owner, "worker-b", "owner")
            try expectEqual(record.progress.fraction, nil, "progress (the stale write was refused)")

            try expectEqual(
                try await store.complete([JobCompletion(lease: second.lease, outcome: .succeeded)]),
                [],
                "outcomes refused for the live lease"
            )
            record = try await self.record(store, id)
            try expectEqual(record.state, .succeeded, "final state")
            try expectEqual(record.attempt, 2, "attempts")
            try expectEqual(record.failures, 1, "failures")
            try expectEqual(record.leaseExpiries, 1, "expired leases")

            // On the last allowed attempt, an expired lease fails the job for good.
            var options = JobOptions()
            options.retry = .never
            let last = try await store.enqueue(JobRequest(name: "conformance.lease", options: options)).id
            _ = try unwrap(
                try await claimOne(store, "conformance.lease", owner: "worker-c", lease: .milliseconds(100)),
                "the claim of the one-attempt job"
            )
            try await waitUntil("the one-attempt job's lease expired") {
                _ = try await store.recoverExpiredLeases()
                return try await store.job(last)?.state == .failed
            }
            let failed = try await self.record(store, last)
            try expect(failed.message?.contains("lease") == true, "the failure names the lease: \(failed.message ?? "")")
        }
    }

    /// A graceful shutdown lets a short job finish, cancels a long one after the grace period and gives
    /// it back to the store without counting a failure; another worker then runs it.
    public func gracefulShutdownReleases() async throws {
        try await withStore { store in
            let long = try await store.enqueue(JobRequest(name: "conformance.long")).id
            let short = try await store.enqueue(JobRequest(name: "conformance.short")).id
            let gate = Gate()
            var registry = JobRegistry()
            registry.register("conformance.long") { _, _ in
                while true { try await Task.sleep(for: .seconds(3600)) }
            }
            registry.register("conformance.short") { _, _ in
                await gate.wait()
            }
            var configuration = Self.testConfiguration()
            configuration.shutdownGracePeriod = .milliseconds(500)
            let worker = startWorker(store, registry, configuration)
            try await waitUntil("both jobs run") {
                try await states(store, [long, short]).allSatisfy { $0 == .running }
            }
            worker.worker.shutdown()
            // The short job ends within the grace period.
            gate.open()
            try await worker.task.value
            try expectEqual(try await record(store, short).state, .succeeded, "the short job")
            let released = try await record(store, long)
            try expectEqual(released.state, .available, "the long job after shutdown")
            try expectEqual(released.failures, 0, "failures of the released job")
            try expectEqual(released.owner, nil, "owner of the released job")

            var next = JobRegistry()
            next.register("conformance.long") { _, _ in }
            let second = startWorker(store, next)
            try await waitUntil("another worker runs the released job") {
                try await store.job(long)?.state == .succeeded
            }
            try await second.stop()
            try expectEqual(try await record(store, long).attempt, 2, "attempts of the released job")
        }
    }
}

/// A one-shot gate: tasks wait until it opens.
final class Gate: Sendable {
    private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let open = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if open { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
