import Foundation
import Logging
import MetricsTestKit
import ServiceLifecycle
import ServiceLifecycleTestKit
import XCTest
import YXJobStore
import YXJobStoreSQLite
@_spi(YXQueueInternals) import YXQueue

/// The worker on a real SQLite store in a temporary folder.
final class JobWorkerTests: XCTestCase {
    private var folder: URL!
    private var store: SQLiteJobStore!

    override func setUp() async throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("yxjobstore-worker-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        store = try await SQLiteJobStore.open(path: folder.appendingPathComponent("jobs.sqlite").path)
    }

    override func tearDown() async throws {
        try await store.close()
        try? FileManager.default.removeItem(at: folder)
    }

    private var quiet: Logger {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }

    private func configuration() -> JobWorker.Configuration {
        var configuration = JobWorker.Configuration()
        // A long lease: on a loaded machine a short one may expire under a live worker and run a job twice.
        configuration.recoveryBound = .seconds(30)
        configuration.cancelCheckInterval = .milliseconds(50)
        configuration.pollInterval = .milliseconds(100)
        return configuration
    }

    /// A worker with a lease of about a second, started, once it runs job `id`.
    private func startWithAShortLease(_ registry: JobRegistry, running id: JobID) async throws -> (JobWorker, Task<Void, any Error>) {
        var configuration = configuration()
        configuration.recoveryBound = .seconds(1)
        let worker = JobWorker(store: store, runner: registry, configuration: configuration, logger: quiet)
        let run = Task { try await worker.run() }
        try await waitFor([id], toBe: [.running])
        return (worker, run)
    }

    /// Holds the store's write lock from another connection until `signal` (at most `seconds`): an
    /// enqueue whose batches are read inside its write transaction, as a long enqueue holds it.
    private func holdTheStoreBusy(until signal: DispatchSemaphore, atMost seconds: Double = 60) async throws {
        let other = try await SQLiteJobStore.open(path: folder.appendingPathComponent("jobs.sqlite").path)
        var held = false
        let busy = JobRequestBatches {
            if held { return nil }
            held = true
            _ = signal.wait(timeout: .now() + seconds)
            return []
        }
        _ = try await other.enqueue(batches: busy)
        try await other.close()
    }

    private func waitFor(_ ids: [JobID], toBe states: Set<StoredJobState>) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            var all = true
            for id in ids where !(states.contains(try await store.job(id)?.state ?? .waiting)) { all = false }
            if all { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        XCTFail("jobs \(ids) did not reach \(states)")
    }

    func testMetricsCountClaimsAndOutcomes() async throws {
        let metrics = TestMetrics()
        var registry = JobRegistry()
        registry.register("ok") { _, _ in }
        registry.register("bad") { _, _ in throw JobHandlerError.doNotRetry("no") }
        registry.register("odd") { _, _ in throw JobHandlerError.discard("cannot run") }
        let ids = try await store.enqueue(
            [JobRequest(name: "ok"), JobRequest(name: "ok"), JobRequest(name: "bad"), JobRequest(name: "odd")]
        ).map(\.id)
        let worker = JobWorker(store: store, runner: registry, configuration: configuration(), logger: quiet, metricsFactory: metrics)
        let run = Task { try await worker.run() }
        try await waitFor(ids, toBe: [.succeeded, .failed, .discarded])
        worker.shutdown()
        try await run.value
        XCTAssertEqual(metrics.counterTotal(label: "yxjobstore.jobs", dimensions: [("name", "ok"), ("outcome", "succeeded")]), 2)
        XCTAssertEqual(metrics.counterTotal(label: "yxjobstore.jobs", dimensions: [("name", "bad"), ("outcome", "failed")]), 1)
        XCTAssertEqual(metrics.counterTotal(label: "yxjobstore.jobs", dimensions: [("name", "odd"), ("outcome", "discarded")]), 1)
        XCTAssertEqual(metrics.counterTotal(label: "yxjobstore.claimed"), 4)
        XCTAssertEqual(try metrics.expectTimer("yxjobstore.job.duration", [("name", "ok")]).values.count, 2)
        let states = try await ids.asyncMap { try await store.job($0)?.state }
        XCTAssertEqual(states, [.succeeded, .succeeded, .failed, .discarded])
    }

    func testGracefulShutdownOfTheServiceGroupGivesRunningJobsBack() async throws {
        let id = try await store.enqueue(JobRequest(name: "long")).id
        var registry = JobRegistry()
        registry.register("long") { _, _ in
            while true { try await Task.sleep(for: .seconds(3600)) }
        }
        var configuration = configuration()
        configuration.shutdownGracePeriod = .milliseconds(100)
        let worker = JobWorker(store: store, runner: registry, configuration: configuration, logger: quiet)
        try await testGracefulShutdown { trigger in
            let run = Task { try await worker.run() }
            try await waitFor([id], toBe: [.running])
            trigger.triggerGracefulShutdown()
            try await run.value
        }
        let record = try await store.job(id)
        XCTAssertEqual(record?.state, .available)
        XCTAssertEqual(record?.failures, 0)
        XCTAssertEqual(record?.attempt, 1)
    }

    func testCancelingTheRunningTaskStopsAtOnceAndGivesJobsBack() async throws {
        let id = try await store.enqueue(JobRequest(name: "long")).id
        var registry = JobRegistry()
        registry.register("long") { _, _ in
            while true { try await Task.sleep(for: .seconds(3600)) }
        }
        var configuration = configuration()
        configuration.shutdownGracePeriod = .seconds(3600)
        let worker = JobWorker(store: store, runner: registry, configuration: configuration, logger: quiet)
        let run = Task { try await worker.run() }
        try await waitFor([id], toBe: [.running])
        run.cancel()
        try await run.value
        let state = try await store.job(id)?.state
        XCTAssertEqual(state, .available)
    }

    /// A handler canceled because its worker could not renew the lease in time learns why
    /// (`context.stopReason`), and the job is left for a later attempt. The store is held busy by another
    /// connection's long enqueue (its batches are read inside its write transaction), as a long
    /// `yxdownload enqueue` held a worker's store in a review. The job is stopped while the store is still
    /// busy: before, its heartbeat waited out the busy store, and the job ran 40 s past a 1 s lease.
    func testAHandlerLearnsThatItsLeaseWasLostWhileTheStoreWasBusy() async throws {
        let id = try await store.enqueue(JobRequest(name: "long")).id
        let seen = Locked<JobStopReason?>(nil)
        let released = Locked(false)
        let stoppedWhileBusy = Locked<Bool?>(nil)
        let stopped = DispatchSemaphore(value: 0)
        var registry = JobRegistry()
        registry.register("long") { _, context in
            do {
                while true { try await Task.sleep(for: .seconds(3600)) }
            } catch {
                seen.withLock { $0 = context.stopReason }
                stoppedWhileBusy.withLock { $0 = !released.withLock { $0 } }
                stopped.signal()
                throw error
            }
        }
        let (worker, run) = try await startWithAShortLease(registry, running: id)

        // Another connection writes until the handler was stopped (20 s at most).
        try await holdTheStoreBusy(until: stopped, atMost: 20)
        released.withLock { $0 = true }
        XCTAssertEqual(seen.withLock { $0 }, .leaseLost)
        XCTAssertEqual(stoppedWhileBusy.withLock { $0 }, true, "the job ran on past its lease while the store was busy")
        worker.shutdown()
        try await run.value
        let record = try await store.job(id)
        XCTAssertNotEqual(record?.state, .succeeded)
        XCTAssertNotEqual(record?.state, .canceled)
    }

    /// A job whose lease ran out while its handler was slow to end is claimed again by the same worker:
    /// the new attempt starts only once the old one has ended, and is tracked (heartbeats, outcome), not
    /// dropped when the old attempt's entry goes (found by a review).
    func testAJobClaimedAgainWhileItsEarlierAttemptEndsStartsAfterItAndIsRecorded() async throws {
        let id = try await store.enqueue(JobRequest(name: "slow-to-end")).id
        let events = Locked<[String]>([])
        let lostLease = DispatchSemaphore(value: 0)
        let path = folder.appendingPathComponent("jobs.sqlite").path
        var registry = JobRegistry()
        registry.register("slow-to-end") { _, context in
            guard context.attempt == 1 else {
                events.withLock { $0.append("second started") }
                return
            }
            do {
                while true { try await Task.sleep(for: .seconds(3600)) }
            } catch {
                lostLease.signal()
                // Lingers until the store has given the job out again (attempt 2), as a download whose
                // cancel takes a moment does (in a task of its own: this one is canceled).
                let jobID = context.id
                await Task.detached {
                    guard let reader = try? await SQLiteJobStore.open(path: path) else { return }
                    let deadline = ContinuousClock.now + .seconds(30)
                    while ContinuousClock.now < deadline, ((try? await reader.job(jobID))??.attempt ?? 0) < 2 {
                        try? await Task.sleep(for: .milliseconds(20))
                    }
                    try? await reader.close()
                    try? await Task.sleep(for: .milliseconds(200))
                }.value
                events.withLock { $0.append("first ended") }
                throw error
            }
        }
        let (worker, run) = try await startWithAShortLease(registry, running: id)
        // Another connection writes until the handler was stopped: the lease cannot be renewed.
        try await holdTheStoreBusy(until: lostLease)
        try await waitFor([id], toBe: [.succeeded])
        worker.shutdown()
        try await run.value
        XCTAssertEqual(events.withLock { $0 }, ["first ended", "second started"])
        let record = try await store.job(id)
        XCTAssertEqual(record?.attempt, 2)
    }

    func testExitWhenIdleReturnsOnceNothingIsLeft() async throws {
        var registry = JobRegistry()
        let ran = Locked(0)
        registry.register("step") { _, _ in ran.withLock { $0 += 1 } }
        let first = try await store.enqueue(JobRequest(name: "step")).id
        _ = try await store.enqueue(JobRequest(name: "step", options: JobOptions(dependencies: [first])))
        var configuration = configuration()
        configuration.exitWhenIdle = true
        try await JobWorker(store: store, runner: registry, configuration: configuration, logger: quiet).run()
        XCTAssertEqual(ran.withLock { $0 }, 2)
        let succeeded = try await store.status().count(.succeeded)
        XCTAssertEqual(succeeded, 2)
    }

    func testAWorkerRunsOnceAndNeedsNames() async throws {
        let empty = JobWorker(store: store, runner: JobRegistry(), logger: quiet)
        await XCTAssertThrowsErrorAsync(try await empty.run()) { XCTAssertEqual($0 as? JobWorkerError, .noJobNames) }
        var registry = JobRegistry()
        registry.register("x") { _, _ in }
        var configuration = configuration()
        configuration.exitWhenIdle = true
        let worker = JobWorker(store: store, runner: registry, configuration: configuration, logger: quiet)
        try await worker.run()
        await XCTAssertThrowsErrorAsync(try await worker.run()) { XCTAssertEqual($0 as? JobWorkerError, .alreadyStarted) }

        // Shut down before it ran (two quick signals as its service group starts, found by a helper's
        // review: `run()` then threw "already started"): it returns at once, having claimed nothing.
        let id = try await store.enqueue(JobRequest(name: "x")).id
        let early = JobWorker(store: store, runner: registry, configuration: configuration, logger: quiet)
        early.shutdown(gracePeriod: .zero)
        early.shutdown()
        try await early.run()
        let record = try await store.job(id)
        XCTAssertEqual(record?.state, .available, "claimed by a worker that was shut down before it ran")
        await XCTAssertThrowsErrorAsync(try await early.run()) { XCTAssertEqual($0 as? JobWorkerError, .alreadyStarted) }
    }

    func testAFloodOfProgressIsThrottledAndTheLastOneRecorded() async throws {
        let id = try await store.enqueue(JobRequest(name: "copy")).id
        var registry = JobRegistry()
        registry.register("copy") { _, context in
            for done in 1...100_000 {
                context.reportProgress(completedUnits: Int64(done), totalUnits: 100_000)
            }
        }
        var configuration = configuration()
        configuration.exitWhenIdle = true
        try await JobWorker(store: store, runner: registry, configuration: configuration, logger: quiet).run()
        let record = try await store.job(id)
        XCTAssertEqual(record?.progress, JobProgress(completedUnits: 100_000, totalUnits: 100_000))
        XCTAssertEqual(record?.progress.fraction, 1)
    }

    func testPerNameCapsLimitThisWorker() async throws {
        let running = Locked((now: 0, most: 0))
        var registry = JobRegistry()
        registry.register("capped", maximumConcurrentJobs: 2) { _, _ in
            running.withLock { state in
                state.now += 1
                state.most = max(state.most, state.now)
            }
            try await Task.sleep(for: .milliseconds(20))
            running.withLock { $0.now -= 1 }
        }
        _ = try await store.enqueue((0..<12).map { _ in JobRequest(name: "capped") })
        var configuration = configuration()
        configuration.exitWhenIdle = true
        try await JobWorker(store: store, runner: registry, configuration: configuration, logger: quiet).run()
        let succeeded = try await store.status().count(.succeeded)
        XCTAssertEqual(succeeded, 12)
        XCTAssertLessThanOrEqual(running.withLock { $0.most }, 2)
    }

    /// A handler that releases its slot lets the worker claim another job in its place, up to
    /// `maximumReleasedJobs` of them; past that, a release is refused and the job keeps its slot. The jobs
    /// that hold a slot never exceed `maximumConcurrentJobs`, and every job still runs once and succeeds.
    func testAReleasedSlotLetsTheWorkerClaimAnotherJobUpToTheBound() async throws {
        struct Counts {
            var now = 0
            var most = 0
            var released = 0
            var releasedMost = 0
            var holdingMost = 0
            var releasedTwice = 0
            var refused = 0
            /// Jobs between their `releaseSlot()` call and its count: a slot released there may already
            /// serve another job, which must not count it as held.
            var releasing = 0
            var runs: [JobID: Int] = [:]
        }
        let counts = Locked(Counts())
        let gate = Locked(false)
        var registry = JobRegistry()
        registry.register("saving") { _, context in
            counts.withLock { counts in
                counts.now += 1
                counts.most = max(counts.most, counts.now)
                counts.holdingMost = max(counts.holdingMost, counts.now - counts.released - counts.releasing)
                counts.runs[context.id, default: 0] += 1
                counts.releasing += 1
            }
            let released = context.releaseSlot()
            let again = context.releaseSlot()
            counts.withLock { counts in
                counts.releasing -= 1
                if released {
                    counts.released += 1
                    counts.releasedMost = max(counts.releasedMost, counts.released)
                } else {
                    counts.refused += 1
                }
                if again { counts.releasedTwice += 1 }
            }
            while !gate.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
            counts.withLock { counts in
                counts.now -= 1
                if released { counts.released -= 1 }
            }
        }
        _ = try await store.enqueue((0..<8).map { _ in JobRequest(name: "saving") })
        var configuration = configuration()
        configuration.maximumConcurrentJobs = 2
        configuration.maximumReleasedJobs = 3
        configuration.claimBatchSize = 1
        configuration.exitWhenIdle = true
        let worker = JobWorker(store: store, runner: registry, configuration: configuration, logger: quiet)
        let run = Task { try await worker.run() }

        // Three jobs released their slots and two hold theirs: five run, none more, until the gate opens.
        let deadline = ContinuousClock.now + .seconds(60)
        // (Each counted its release or refusal too: a job counts itself running before it asks.)
        while counts.withLock({ $0.now < 5 || $0.released + $0.refused < $0.now }) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let stalled = counts.withLock { $0 }
        XCTAssertEqual(stalled.now, 5, "2 slots held + 3 released")
        XCTAssertEqual(stalled.released, 3)
        XCTAssertEqual(stalled.refused, 2, "the releases past the bound were refused")
        let running = try await store.status().count(.running)
        XCTAssertEqual(running, 5, "the released jobs still run in the store, under their leases")

        gate.withLock { $0 = true }
        try await run.value
        let final = counts.withLock { $0 }
        let succeeded = try await store.status().count(.succeeded)
        XCTAssertEqual(succeeded, 8)
        XCTAssertEqual(Set(final.runs.values), [1])
        XCTAssertEqual(final.runs.count, 8)
        XCTAssertEqual(final.most, 5)
        XCTAssertEqual(final.releasedMost, 3)
        XCTAssertLessThanOrEqual(final.holdingMost, 2, "jobs holding a slot stay within maximumConcurrentJobs")
        XCTAssertEqual(final.releasedTwice, 0, "a second release of one attempt is refused")
    }

    /// Without `maximumReleasedJobs` (0 by default), a release is refused: the worker's limit stays whole.
    func testNoSlotIsReleasedByDefault() async throws {
        let results = Locked<[Bool]>([])
        var registry = JobRegistry()
        registry.register("saving") { _, context in
            let released = context.releaseSlot()
            results.withLock { $0.append(released) }
        }
        _ = try await store.enqueue((0..<3).map { _ in JobRequest(name: "saving") })
        var configuration = configuration()
        configuration.exitWhenIdle = true
        try await JobWorker(store: store, runner: registry, configuration: configuration, logger: quiet).run()
        XCTAssertEqual(results.withLock { $0 }, [false, false, false])
    }

    /// One job per claim and per outcome write, so outcomes ride along with claims and outcome writes
    /// claim the next jobs (two loops claiming at once): the worker's slots and a name's cap still
    /// hold, and every job runs exactly once.
    func testSlotsAndCapsHoldWhenOutcomesAndClaimsShareTrips() async throws {
        struct Counts {
            var now = 0
            var most = 0
            var cappedNow = 0
            var cappedMost = 0
            var runs: [JobID: Int] = [:]
        }
        let counts = Locked(Counts())
        var registry = JobRegistry()
        for name in ["plain", "capped"] {
            registry.register(name, maximumConcurrentJobs: name == "capped" ? 2 : nil) { _, context in
                counts.withLock { counts in
                    counts.now += 1
                    counts.most = max(counts.most, counts.now)
                    if name == "capped" {
                        counts.cappedNow += 1
                        counts.cappedMost = max(counts.cappedMost, counts.cappedNow)
                    }
                    counts.runs[context.id, default: 0] += 1
                }
                // Long enough for the other loop to claim while this slot is taken.
                try await Task.sleep(for: .microseconds(Int.random(in: 0...2000)))
                counts.withLock { counts in
                    counts.now -= 1
                    if name == "capped" { counts.cappedNow -= 1 }
                }
            }
        }
        let ids = try await store.enqueue(
            (0..<300).map { _ in JobRequest(name: "plain") } + (0..<100).map { _ in JobRequest(name: "capped") }
        ).map(\.id)
        var configuration = configuration()
        configuration.maximumConcurrentJobs = 4
        configuration.claimBatchSize = 1
        configuration.completionBatchSize = 1
        configuration.exitWhenIdle = true
        try await JobWorker(store: store, runner: registry, configuration: configuration, logger: quiet).run()

        let final = counts.withLock { $0 }
        let succeeded = try await store.status().count(.succeeded)
        XCTAssertEqual(succeeded, 400)
        XCTAssertLessThanOrEqual(final.most, 4)
        XCTAssertLessThanOrEqual(final.cappedMost, 2)
        XCTAssertEqual(final.runs.count, 400)
        XCTAssertEqual(Set(final.runs.values), [1])
        let records = try await store.jobs(JobQuery(names: ["plain", "capped"], limit: 1000))
        XCTAssertEqual(Set(records.map(\.attempt)), [1])
        XCTAssertEqual(Set(records.map(\.id)), Set(ids))
    }

    /// The store job's policy is YXQueue's RetryPolicy: its scope decides which handler errors are
    /// retried, and a transient error's Retry-After is waited for, up to maxRetryAfter.
    func testTheRetryScopeAndRetryAfterOfTheStoredPolicy() async throws {
        struct Plain: Error {}
        struct Busy: TransientError {
            var isTransient: Bool { true }
            var retryAfter: TimeInterval? { 0.4 }
        }
        struct Closed: TransientError {
            var isTransient: Bool { true }
            var retryAfter: TimeInterval? { 7200 }
        }
        let starts = Locked<[String: [ContinuousClock.Instant]]>([:])
        var registry = JobRegistry()
        for (name, error) in [("plain", Plain() as any Error), ("busy", Busy()), ("closed", Closed())] {
            registry.register(name) { _, context in
                starts.withLock { $0[name, default: []].append(.now) }
                if context.attempt == 1 { throw error }
            }
        }
        let transientOnly = JobOptions(retry: RetryPolicy(retries: 3, initialDelay: 0.01, jitter: 0))
        let ids = try await store.enqueue(
            ["plain", "busy", "closed"].map { JobRequest(name: $0, options: transientOnly) }
        ).map(\.id)
        var configuration = configuration()
        configuration.exitWhenIdle = true
        try await JobWorker(store: store, runner: registry, configuration: configuration, logger: quiet).run()
        let records = try await ids.asyncMap { try await store.job($0) }
        // Not transient: failed at once.
        XCTAssertEqual(records[0]?.state, .failed)
        XCTAssertEqual(records[0]?.attempt, 1)
        // Transient, asking for 0.4 s: retried after 0.4 s or more (the policy's own back-off is 10 ms).
        XCTAssertEqual(records[1]?.state, .succeeded)
        XCTAssertEqual(records[1]?.attempt, 2)
        let busy = starts.withLock { $0["busy"] ?? [] }
        XCTAssertEqual(busy.count, 2)
        if busy.count == 2 { XCTAssertGreaterThanOrEqual(busy[1] - busy[0], .milliseconds(400)) }
        // Transient, asking for longer than maxRetryAfter (an hour): the failure stands.
        XCTAssertEqual(records[2]?.state, .failed)
        XCTAssertEqual(records[2]?.attempt, 1)
    }
}

func XCTAssertThrowsErrorAsync<T>(
    _ expression: @autoclosure () async throws -> T,
    file: StaticString = #filePath,
    line: UInt = #line,
    _ handler: (any Error) -> Void
) async {
    do {
        _ = try await expression()
        XCTFail("no error was thrown", file: file, line: line)
    } catch {
        handler(error)
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
