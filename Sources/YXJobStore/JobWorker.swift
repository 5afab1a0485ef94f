import Foundation
import Logging
import Metrics
import ServiceLifecycle
@_spi(YXQueueInternals) import YXQueue

/// Runs persistent jobs from a ``JobStore``: claims ready jobs of the names its runner knows, runs them,
/// renews their leases, notices cancels, records outcomes, and retries failures with back-off.
///
/// A worker is a swift-service-lifecycle `Service`: run it in a `ServiceGroup` and it shuts down
/// gracefully on SIGTERM (or call ``shutdown()``): it stops claiming, lets running jobs finish within
/// ``Configuration/shutdownGracePeriod``, then cancels the rest and gives them back to the store, where
/// another worker takes them (the released attempt does not count as a failure).
///
/// What it does, and how often:
/// - **Claims** in batches (``Configuration/claimBatchSize``) under its own limits
///   (``Configuration/maximumConcurrentJobs`` and the runner's per-name caps; a job whose handler
///   released its slot, ``StoredJobContext/releaseSlot()``, counts against
///   ``Configuration/maximumReleasedJobs`` instead) and the store's global ones, and again at once while
///   claims come back full. Otherwise it waits for the store's wake-up
///   (PostgreSQL `LISTEN/NOTIFY`, SQLite's data version), for the next not-before time, or for
///   ``Configuration/pollInterval``, whichever comes first.
/// - **Heartbeats**: renews each running job's lease every quarter of the lease, and writes progress
///   at most every ``Configuration/progressInterval`` (a progress write renews the lease too).
/// - **Cancels**: asks the store every ``Configuration/cancelCheckInterval`` which of its jobs were
///   canceled or lost, and cancels their handlers' tasks; a job's own ``JobOptions/timeout`` cancels it
///   too (counted as a failed attempt).
/// - **Recovers** other workers' expired leases, and sweeps dependencies now and then.
/// - **Completes**: outcomes are written in groups (``Configuration/completionBatchSize``); each is
///   recorded only by the attempt that holds the lease. On a store that records and claims in one trip
///   (``JobStore/combinesOutcomesWithClaims``: SQLite), small groups ride along with claims, and while
///   jobs wait in the store, small outcome writes claim the jobs that take their slots
///   (``JobStore/complete(_:thenClaim:)``).
///
/// A job whose handler is unknown or whose parameters do not decode ends `discarded` with the reason;
/// a store error is logged and retried; neither stops the worker.
///
/// Metrics (swift-metrics): `yxjobstore.jobs` (counter by `name` and `outcome`: succeeded, retried,
/// failed, canceled, discarded, released, lease_lost), `yxjobstore.claimed` (counter by `name`),
/// `yxjobstore.job.queued` and `yxjobstore.job.duration` (timers by `name`: from ready to start, and the
/// handler's run), `yxjobstore.leases.recovered`, `yxjobstore.outcomes.refused`, and
/// `yxjobstore.store.errors` (counter by `operation`).
///
/// Stored ``JobDefinition``s run through a YXQueue `Dispatcher` (its queue limits, graphs, retries
/// within an attempt), registered with ``JobRegistry/register(_:on:maximumConcurrentJobs:decoder:encoder:)``.
///
/// ```swift
/// var registry = JobRegistry()
/// registry.register("email", parameters: Email.self) { email, context in try await send(email) }
/// registry.register(Thumbnail.self, on: dispatcher)
/// let worker = JobWorker(store: store, runner: registry, logger: Logger(label: "worker"))
/// let group = ServiceGroup(services: [worker], gracefulShutdownSignals: [.sigterm], logger: logger)
/// try await group.run()
/// ```
public final class JobWorker: Service, Sendable {
    /// The settings, as clamped at creation.
    public let configuration: Configuration

    private let store: any JobStore
    /// Whether outcomes and claims share trips to the store (``JobStore/combinesOutcomesWithClaims``).
    private let combinesTrips: Bool
    private let runner: any JobRunner
    private let logger: Logger
    private let metrics: JobWorkerMetrics
    private let state = Locked(State())
    /// Moves when a job ends or the phase changes: wakes the claim loop and the drain.
    private let slotSignal = ChangeSignal()
    /// Moves when an outcome waits to be written or the phase changes.
    private let completionSignal = ChangeSignal()
    /// Moves when the phase changes: wakes the control loop.
    private let controlSignal = ChangeSignal()

    /// The worker's identity, the owner of the jobs it claims.
    public var id: String { configuration.workerID }

    /// Creates a worker; nothing happens before ``run()``.
    ///
    /// - Parameters:
    ///   - store: Where the jobs are.
    ///   - runner: What runs them: a ``JobRegistry`` or another ``JobRunner``.
    ///   - configuration: Limits, batching, intervals, shutdown.
    ///   - logger: Where the worker logs (with `worker` metadata).
    ///   - metricsFactory: Where its counters and timers go (see ``JobWorker`` for their names); the
    ///     bootstrapped `MetricsSystem` by default.
    public init(
        store: any JobStore,
        runner: any JobRunner,
        configuration: Configuration = Configuration(),
        logger: Logger = Logger(label: "yxjobstore.worker"),
        metricsFactory: any MetricsFactory = MetricsSystem.factory
    ) {
        self.metrics = JobWorkerMetrics(factory: metricsFactory)
        self.store = store
        self.combinesTrips = store.combinesOutcomesWithClaims
        self.runner = runner
        self.configuration = configuration.clamped
        var logger = logger
        logger[metadataKey: "worker"] = "\(configuration.workerID)"
        self.logger = logger
    }

    /// The jobs this worker runs right now.
    public var runningJobs: [JobID] {
        state.withLock { Array($0.running.keys) }
    }

    // MARK: - Lifecycle

    /// Runs until ``shutdown()``, a graceful shutdown of its service group, the cancel of the calling
    /// task (a shutdown without grace period), or, with ``Configuration/exitWhenIdle``, until no job
    /// of its names is left.
    ///
    /// Returns once every job it claimed has an outcome written (or was given back).
    ///
    /// - Throws: ``JobWorkerError`` when it cannot start; with ``Configuration/exitWhenIdle``, the
    ///   store's error when its claims kept failing (8 in a row, about 6 s): it stopped, since it could
    ///   not tell whether jobs were left.
    public func run() async throws {
        let names = runner.jobNames
        guard !names.isEmpty else { throw JobWorkerError.noJobNames }
        enum Start { case started, shutDownFirst, again }
        let start = state.withLock { state -> Start in
            switch state.phase {
            case .created:
                state.phase = .running
                return .started
            case .shutDownBeforeRun:
                // Shut down before it ran (a signal as its service group started): nothing to do.
                state.phase = .stopped
                return .shutDownFirst
            case .running, .draining, .stopped:
                return .again
            }
        }
        switch start {
        case .started: break
        case .shutDownFirst: return
        case .again: throw JobWorkerError.alreadyStarted
        }
        logger.info(
            "worker started",
            metadata: ["names": "\(names.joined(separator: ","))", "concurrency": "\(configuration.maximumConcurrentJobs)"]
        )

        // The loops are tasks of the worker's own, not children of the caller's: a canceled caller
        // must still be able to give its jobs back to the store.
        let control = Task { await self.controlLoop() }
        // Leases are watched apart from the control loop, whose heartbeat may wait on a busy store
        // (another process's long write): a job must not run on past its lease, when another worker
        // may take it over (found by a review: a long enqueue held it 40 s past a 1 s lease).
        let leaseWatch = Task { await self.leaseWatchLoop() }
        // The runner's names and caps are fixed: the claim groups are made once, for both loops that claim.
        let groups = claimGroups(names: names)
        let completions = Task { await self.completionLoop(groups: groups) }
        let main = Task {
            await self.claimLoop(names: names, groups: groups)
            await self.drain()
        }
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                await main.value
            } onGracefulShutdown: {
                self.shutdown()
            }
        } onCancel: {
            self.shutdown(gracePeriod: .zero)
        }
        state.withLock { $0.phase = .stopped }
        completionSignal.signal()
        controlSignal.signal()
        await completions.value
        control.cancel()
        leaseWatch.cancel()
        await control.value
        await leaseWatch.value
        logger.info("worker stopped")
        if let failure = state.withLock({ $0.storeFailure }) { throw failure }
    }

    /// Stops claiming, lets running jobs finish within the grace period, then cancels them and gives
    /// them back to the store. Safe to call any number of times, from anywhere; before ``run()``, that
    /// call returns at once.
    public func shutdown() {
        shutdown(gracePeriod: configuration.shutdownGracePeriod)
    }

    /// Stops claiming, lets running jobs finish within `gracePeriod`, then cancels them and gives them
    /// back to the store. A shorter period than that of an earlier call takes over (`.zero`: cancel them
    /// now, as a second Ctrl-C asks); a longer one changes nothing.
    public func shutdown(gracePeriod: Duration) {
        let changed = state.withLock { state -> Bool in
            let deadline = ContinuousClock.now + gracePeriod
            switch state.phase {
            case .created:
                state.phase = .shutDownBeforeRun
                return true
            case .running:
                state.phase = .draining(deadline: deadline)
                return true
            case .draining(let previous):
                guard deadline < previous else { return false }
                state.phase = .draining(deadline: deadline)
                return true
            case .stopped, .shutDownBeforeRun:
                return false
            }
        }
        guard changed else { return }
        logger.info("worker shutting down", metadata: ["grace": "\(gracePeriod)"])
        slotSignal.signal()
        completionSignal.signal()
        controlSignal.signal()
    }

    private var isRunning: Bool {
        state.withLock { state in
            if case .running = state.phase { return true }
            return false
        }
    }

    // MARK: - Claiming

    /// A worker that exits when idle gives up after this many claims in a row failed (about 6 s of
    /// back-off): it cannot tell whether the queue is empty, and would otherwise wait for ever on a store
    /// that refuses it (a read-only or damaged file). A worker that runs as a service keeps trying, and
    /// tells ``Configuration/claimTrouble``.
    public static let claimFailuresBeforeGivingUp = 8

    private func claimLoop(names: [String], groups: [[String]]) async {
        var errorDelay = Duration.milliseconds(50)
        var failuresInARow = 0
        while isRunning {
            let storeGeneration = store.changeGeneration
            let slotGeneration = slotSignal.generation
            let free = state.withLock { configuration.maximumConcurrentJobs - $0.occupied }
            if free <= 0 {
                await slotSignal.wait(after: slotGeneration, timeout: .seconds(5))
                continue
            }
            var wantedMore = false
            var claimedAll = true
            var claimedAny = false
            do {
                for group in groups where isRunning {
                    // The room now: the claims before this one took some.
                    let limit = reserveRoom(for: group)
                    guard limit > 0 else { continue }
                    let asked = ContinuousClock.now
                    let jobs = try await claim(group, limit: limit)
                    wantedMore = true
                    if jobs.count < limit { claimedAll = false }
                    if !jobs.isEmpty { claimedAny = true }
                    start(jobs, reserved: limit, group: group, askedAt: asked)
                }
                if configuration.discardUnknownJobs, isRunning {
                    let unknown = try await store.claim(
                        ClaimRequest(
                            owner: id,
                            names: .allExcept(names),
                            limit: configuration.claimBatchSize,
                            leaseDuration: configuration.leaseDuration
                        )
                    )
                    if !unknown.isEmpty { claimedAny = true }
                    discardUnknown(unknown)
                }
                errorDelay = .milliseconds(50)
                if failuresInARow >= Self.claimFailuresBeforeGivingUp {
                    logger.notice("claims succeed again", metadata: ["failures": "\(failuresInARow)"])
                    configuration.claimTrouble?(nil)
                }
                failuresInARow = 0
            } catch {
                metrics.storeError("claim")
                failuresInARow += 1
                if configuration.exitWhenIdle && failuresInARow >= Self.claimFailuresBeforeGivingUp {
                    logger.error("claims keep failing; stopping (exit when idle)", metadata: ["error": "\(String(reflecting: error))"])
                    state.withLock { $0.storeFailure = $0.storeFailure ?? error }
                    shutdown()
                    break
                }
                if failuresInARow == Self.claimFailuresBeforeGivingUp {
                    logger.error("claims keep failing; still trying", metadata: ["error": "\(String(reflecting: error))"])
                    configuration.claimTrouble?(error)
                }
                logger.warning(
                    "claim failed; trying again",
                    metadata: ["error": "\(String(reflecting: error))", "delay": "\(errorDelay)"]
                )
                await slotSignal.wait(after: slotSignal.generation, timeout: errorDelay)
                errorDelay = min(errorDelay * 2, .seconds(5))
                continue
            }
            if wantedMore && claimedAll { continue }

            if configuration.exitWhenIdle, !claimedAny, state.withLock({ $0.running.isEmpty }) {
                if let live = try? await store.jobs(JobQuery(states: Set(StoredJobState.live), names: names, limit: 1)),
                    live.isEmpty
                {
                    logger.info("no job left; stopping (exit when idle)")
                    shutdown()
                    break
                }
            }
            var timeout = configuration.pollInterval * Double.random(in: 0.8...1.2)
            if let next = try? await store.delayUntilNextJob(names: .only(names)) {
                timeout = min(timeout, max(.milliseconds(1), next))
            }
            await waitForWork(storeGeneration: storeGeneration, slotGeneration: slotGeneration, timeout: timeout)
        }
    }

    /// The claims to make: each name with a cap of its own apart, the others together.
    private func claimGroups(names: [String]) -> [[String]] {
        var shared: [String] = []
        var groups: [[String]] = []
        for name in names {
            if runner.maximumConcurrentJobs(named: name) != nil {
                groups.append([name])
            } else {
                shared.append(name)
            }
        }
        return shared.isEmpty ? groups : [shared] + groups
    }

    /// Reserves the slots for a claim of a group: its free slots, the group's own cap (for a name with
    /// one), at most a batch. ``start(_:reserved:group:)`` gives the reservation back.
    private func reserveRoom(for group: [String]) -> Int {
        state.withLock { state in reserveRoom(for: group, in: &state) }
    }

    private func reserveRoom(for group: [String], in state: inout State, atMost most: Int = .max) -> Int {
        var room = min(configuration.maximumConcurrentJobs - state.occupied, configuration.claimBatchSize, most)
        let capped = group.count == 1 ? runner.maximumConcurrentJobs(named: group[0]) : nil
        if let cap = capped {
            room = min(room, cap - state.runningByName[group[0], default: 0] - state.reservedByName[group[0], default: 0])
        }
        room = max(0, room)
        state.reserved += room
        if capped != nil { state.reservedByName[group[0], default: 0] += room }
        return room
    }

    private func claimRequest(_ group: [String], limit: Int) -> ClaimRequest {
        ClaimRequest(owner: id, names: .only(group), limit: limit, leaseDuration: configuration.leaseDuration)
    }

    private func waitForWork(storeGeneration: UInt64, slotGeneration: UInt64, timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.store.waitForChange(after: storeGeneration, timeout: timeout) }
            group.addTask { await self.slotSignal.wait(after: slotGeneration, timeout: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Starts claimed jobs in the slots reserved for their claim, and gives back the reservation
    /// (in one step: the slots are never counted free in between).
    ///
    /// - Parameter asked: When the claim was asked for. The store counts the lease from a moment after
    ///   that, maybe long before the answer (a claim that waited on a busy store): counted from here, the
    ///   worker never thinks a lease longer than it is (found by a review).
    private func start(_ jobs: [ClaimedJob], reserved: Int, group: [String], askedAt asked: ContinuousClock.Instant = .now) {
        let now = asked
        let boxes = jobs.map { _ in ProgressBox() }
        let (running, earlier) = state.withLock { state -> (Bool, [JobID: Task<Void, Never>]) in
            state.reserved -= reserved
            if group.count == 1, let name = group.first, let held = state.reservedByName[name] {
                state.reservedByName[name] = held > reserved ? held - reserved : nil
            }
            // A full claim: more jobs are likely waiting.
            if reserved > 0 { state.backlog = jobs.count >= reserved }
            guard case .running = state.phase else { return (false, [:]) }
            var earlier: [JobID: Task<Void, Never>] = [:]
            for (job, box) in zip(jobs, boxes) {
                if let previous = state.running[job.id] {
                    // The same job again while its earlier attempt here still ends (its lease ran out, and
                    // the store gave the job back to this worker): the new attempt takes the entry, counts
                    // once, and starts when the earlier one has ended, so that the two never work at once
                    // (found by a review: the earlier one removed the new one's entry, which then ran
                    // without heartbeats).
                    if let task = previous.task { earlier[job.id] = task }
                    if previous.released {
                        // The new attempt holds a slot, whatever the earlier one said.
                        state.released -= 1
                        state.runningByName[job.name, default: 0] += 1
                    }
                } else {
                    state.runningByName[job.name, default: 0] += 1
                }
                state.running[job.id] = RunningJob(
                    lease: job.lease,
                    name: job.name,
                    progress: box,
                    renewedAt: now,
                    progressWrittenAt: now,
                    deadline: job.timeout.map { now + $0 }
                )
            }
            return (true, earlier)
        }
        guard running else {
            // Claimed while the worker began to shut down (the completion loop claims too): given back unrun.
            if !jobs.isEmpty {
                enqueueCompletions(jobs.map { JobCompletion(lease: $0.lease, outcome: .released(after: .zero)) })
            }
            return
        }
        for (job, box) in zip(jobs, boxes) {
            metrics.metrics(for: job.name).claimed(queuedSeconds: Date().timeIntervalSince(job.readyAt))
            let before = earlier[job.id]
            let task = Task {
                await before?.value
                await self.execute(job, progress: box)
            }
            let cancelNow = state.withLock { state -> Bool in
                guard state.running[job.id] != nil else { return false }
                state.running[job.id]?.task = task
                return state.running[job.id]?.stopReason != nil
            }
            if cancelNow { task.cancel() }
        }
    }

    private func discardUnknown(_ jobs: [ClaimedJob]) {
        guard !jobs.isEmpty else { return }
        for job in jobs {
            metrics.metrics(for: job.name).outcome("discarded")
            logger.warning("discarding job with unknown name", metadata: ["job": "\(job.id)", "job.name": "\(job.name)"])
        }
        enqueueCompletions(
            jobs.map {
                JobCompletion(
                    lease: $0.lease,
                    outcome: .discarded(reason: "no handler is registered for job name \"\($0.name)\"")
                )
            }
        )
    }

    // MARK: - Running

    private func execute(_ job: ClaimedJob, progress: ProgressBox) async {
        let context = StoredJobContext(
            job: job, logger: logger, progressBox: progress,
            releaseSlot: { [weak self] in self?.releaseSlot(of: job) ?? false })
        let clock = ContinuousClock()
        let began = clock.now
        let result: Result<Data?, any Error>
        do {
            result = .success(try await runner.run(job, context: context))
        } catch {
            result = .failure(error)
        }
        let jobMetrics = metrics.metrics(for: job.name)
        jobMetrics.ran(duration: clock.now - began)
        // Counted as finishing until its outcome is queued: the drain waits for that too, or a
        // shutdown could stop the completion loop between the two and leave the job running in the store.
        let ended = state.withLock { state -> RunningJob? in
            // Only this attempt's entry: a later attempt of the same job may have taken it (see `start`).
            guard let entry = state.running[job.id], entry.lease == job.lease else { return nil }
            state.running.removeValue(forKey: job.id)
            if entry.released {
                state.released -= 1
            } else {
                state.runningByName[job.name, default: 1] -= 1
            }
            state.finishing += 1
            return entry
        }
        defer {
            if ended != nil { state.withLock { $0.finishing -= 1 } }
            slotSignal.signal()
        }
        // Missing: the drain gave the job back already, because the handler ignored its cancel; or a
        // later attempt of the job took the entry (this one's lease was lost: no outcome to record).
        guard let ended else { return }
        let (outcome, label) = decideOutcome(job, result: result, stopReason: ended.stopReason)
        jobMetrics.outcome(label)
        guard let outcome else {
            context.logger.warning("lease lost; the outcome of this attempt is not recorded")
            return
        }
        switch outcome {
        case .succeeded:
            break
        case .released(let delay):
            context.logger.debug("job released", metadata: ["outcome": "\(label)", "delay": "\(delay)"])
        case .retry(let delay, let error):
            context.logger.info("job failed; retrying", metadata: ["error": "\(error)", "delay": "\(delay)"])
        case .failed(let error):
            context.logger.warning("job failed", metadata: ["error": "\(error)"])
        case .canceled(let reason), .discarded(let reason):
            context.logger.info("job ended", metadata: ["outcome": "\(label)", "reason": "\(reason)"])
        }
        let stored: Data? =
            if case .succeeded = outcome, case .success(let value) = result { value } else { nil }
        // A job that succeeded is done, whether or not its last progress event arrived before its end.
        let recorded: JobProgress? =
            if case .succeeded = outcome { .completed(after: progress.latest) } else { progress.latest }
        enqueueCompletions([
            JobCompletion(lease: job.lease, outcome: outcome, progress: recorded, result: stored)
        ])
    }

    /// Lets `job`'s attempt run on without its slot (``StoredJobContext/releaseSlot()``), within
    /// ``Configuration/maximumReleasedJobs``; wakes the claim loop when it did.
    private func releaseSlot(of job: ClaimedJob) -> Bool {
        let released = state.withLock { state -> Bool in
            guard case .running = state.phase, var entry = state.running[job.id], entry.lease == job.lease,
                !entry.released, entry.stopReason == nil, state.released < configuration.maximumReleasedJobs
            else { return false }
            entry.released = true
            state.running[job.id] = entry
            state.released += 1
            state.runningByName[job.name, default: 1] -= 1
            return true
        }
        if released { slotSignal.signal() }
        return released
    }

    /// How an attempt ended, from how the handler ended and why the worker stopped it (if it did).
    ///
    /// A failed attempt is retried as the job's ``RetryPolicy`` says: handler errors within its scope
    /// (honouring a ``TransientError/retryAfter``), timeouts whatever the scope.
    private func decideOutcome(
        _ job: ClaimedJob,
        result: Result<Data?, any Error>,
        stopReason: StopReason?
    ) -> (JobOutcome?, String) {
        if stopReason == .leaseLost { return (nil, "lease_lost") }
        guard case .failure(let error) = result else { return (.succeeded, "succeeded") }
        if case JobHandlerError.discard(let reason) = error { return (.discarded(reason: reason), "discarded") }
        if let release = error as? JobRelease, stopReason != .canceledInStore {
            return (.released(after: release.delay), "released")
        }
        let message: String
        let delay: TimeInterval?
        switch stopReason {
        case .canceledInStore:
            return (.canceled(reason: "canceled while running"), "canceled")
        case .shutdown:
            return (.released(after: .zero), "released")
        case .timedOut:
            message = "timed out after \(job.timeout ?? .zero)"
            // Not the handler's error: the attempt ran out of time, whatever the policy's scope.
            delay =
                job.failures < job.retry.retries
                ? job.retry.delay(beforeRetry: job.failures + 1) : nil
        case .leaseLost, nil:
            if case JobHandlerError.doNotRetry(let reason) = error { return (.failed(error: reason), "failed") }
            message = String(String(describing: error).prefix(2000))
            delay = job.retry.delay(after: error, retriesUsed: job.failures)
        }
        guard let delay else { return (.failed(error: message), "failed") }
        // Capped at a century: a policy's delays are finite but may be absurd, and must not overflow.
        let milliseconds = Int64((min(max(0, delay), 3_155_760_000) * 1000).rounded())
        return (.retry(after: .milliseconds(milliseconds), error: message), "retried")
    }

    /// Cancels a running job's handler for `reason` (the first reason wins).
    private func stop(_ id: JobID, reason: StopReason) {
        let (task, box) = state.withLock { state -> (Task<Void, Never>?, ProgressBox?) in
            guard state.running[id] != nil, state.running[id]?.stopReason == nil else { return (nil, nil) }
            state.running[id]?.stopReason = reason
            return (state.running[id]?.task, state.running[id]?.progress)
        }
        box?.stop(because: reason)  // before the cancel: the handler reads why when it sees it
        if let task {
            logger.debug("stopping job", metadata: ["job": "\(id)", "reason": "\(reason)"])
            task.cancel()
        }
    }

    // MARK: - Shutdown

    /// After the claim loop ended: waits for running jobs within the grace period, then cancels them;
    /// gives back those whose handlers ignore the cancel.
    private func drain() async {
        let graceDeadline = state.withLock { state -> ContinuousClock.Instant in
            if case .draining(let deadline) = state.phase { return deadline }
            return .now
        }
        await waitForRunningJobs(until: graceDeadline)
        let remaining = state.withLock { Array($0.running.keys) }
        guard !remaining.isEmpty else { return }
        logger.info("grace period over; canceling running jobs", metadata: ["jobs": "\(remaining.count)"])
        for id in remaining {
            stop(id, reason: .shutdown)
        }
        await waitForRunningJobs(until: .now + .seconds(5))
        // Handlers that ignore their cancel: give their jobs back anyway, and forget them.
        let abandoned = state.withLock { state -> [RunningJob] in
            let entries = Array(state.running.values)
            state.running.removeAll()
            state.runningByName.removeAll()
            state.released = 0
            return entries
        }
        if !abandoned.isEmpty {
            logger.warning("handlers ignore their cancel; giving their jobs back", metadata: ["jobs": "\(abandoned.count)"])
            enqueueCompletions(abandoned.map { JobCompletion(lease: $0.lease, outcome: .released(after: .zero)) })
        }
        // Handlers that did end are queueing their outcomes (no waiting on user code: a few statements).
        while state.withLock({ $0.finishing > 0 }) {
            let generation = slotSignal.generation
            guard state.withLock({ $0.finishing > 0 }) else { break }
            await slotSignal.wait(after: generation, timeout: .milliseconds(10))
        }
    }

    private func waitForRunningJobs(until deadline: ContinuousClock.Instant) async {
        while true {
            let generation = slotSignal.generation
            let (empty, deadlineNow) = state.withLock { state -> (Bool, ContinuousClock.Instant) in
                // A later shutdown() may have shortened the grace period.
                let empty = state.running.isEmpty && state.finishing == 0
                if case .draining(let shortened) = state.phase { return (empty, min(deadline, shortened)) }
                return (empty, deadline)
            }
            let now = ContinuousClock.now
            if empty || now >= deadlineNow { return }
            await slotSignal.wait(after: generation, timeout: deadlineNow - now)
        }
    }

    // MARK: - Completions

    private func enqueueCompletions(_ completions: [JobCompletion]) {
        state.withLock { state in
            if state.pending.isEmpty { state.pendingSince = .now }
            state.pending.append(contentsOf: completions)
        }
        completionSignal.signal()
    }

    /// Writes outcomes. While jobs wait in the store (the last claim came back full), each write
    /// also claims jobs for the slots that are free: one trip to the store where the claim loop
    /// would make a second (``JobStore/complete(_:thenClaim:)``).
    private func completionLoop(groups: [[String]]) async {
        var errorDelay = Duration.milliseconds(50)
        var failingSince: ContinuousClock.Instant?
        var nextGroup = 0
        while true {
            let generation = completionSignal.generation
            let (batch, wait, finished, claim) = state.withLock {
                state -> ([JobCompletion], Duration?, Bool, (group: [String], limit: Int)?) in
                let stopped: Bool
                if case .stopped = state.phase { stopped = true } else { stopped = false }
                // Nothing to write: wait for the next outcome (or the stop, which signals too).
                guard !state.pending.isEmpty else { return ([], stopped ? nil : .zero, stopped, nil) }
                let age = ContinuousClock.now - (state.pendingSince ?? .now)
                let full = state.pending.count >= configuration.completionBatchSize
                if !full, !stopped, age < configuration.completionDelay {
                    return ([], configuration.completionDelay - age, false, nil)
                }
                let batch = state.takeBatch(configuration.completionBatchSize)
                guard case .running = state.phase, combinesTrips, state.backlog, batch.count <= Self.smallTrip else {
                    return (batch, nil, false, nil)
                }
                // The groups take turns, as in the claim loop.
                for offset in groups.indices {
                    let group = groups[(nextGroup + offset) % groups.count]
                    let limit = reserveRoom(for: group, in: &state, atMost: batch.count)
                    if limit > 0 {
                        nextGroup = (nextGroup + offset + 1) % groups.count
                        return (batch, nil, false, (group, limit))
                    }
                }
                return (batch, nil, false, nil)
            }
            if finished { return }
            if let wait {
                await completionSignal.wait(after: generation, timeout: wait == .zero ? nil : wait)
                continue
            }
            do {
                if let claim {
                    try await writeOutcomes(batch, thenClaim: claim.group, limit: claim.limit)
                } else {
                    reportRefused(try await store.complete(batch))
                }
                errorDelay = .milliseconds(50)
                failingSince = nil
            } catch {
                metrics.storeError("complete")
                let since = failingSince ?? .now
                failingSince = since
                let stopped = state.withLock { state -> Bool in
                    if case .stopped = state.phase { return true }
                    return false
                }
                // Once stopped, give up after a while: the leases expire and other workers take the jobs.
                if stopped, ContinuousClock.now - since > configuration.leaseDuration {
                    logger.error(
                        "cannot record outcomes; leaving them to lease expiry",
                        metadata: ["error": "\(String(reflecting: error))", "outcomes": "\(batch.count)"]
                    )
                    state.withLock { $0.pending.removeAll() }
                    return
                }
                logger.warning("recording outcomes failed; trying again", metadata: ["error": "\(String(reflecting: error))"])
                requeue(batch)
                try? await Task.sleep(for: errorDelay)
                errorDelay = min(errorDelay * 2, .seconds(2))
            }
        }
    }

    /// Claims jobs of `group` for the `limit` slots reserved, taking along the outcomes that wait to be
    /// written, when both are few (a large group of outcomes is left whole to the completion loop, and
    /// outcomes meant to wait for company wait): one trip to the store for both.
    private func claim(_ group: [String], limit: Int) async throws -> [ClaimedJob] {
        let outcomes = state.withLock { state -> [JobCompletion] in
            guard combinesTrips, configuration.completionDelay == .zero, limit <= Self.smallTrip,
                state.pending.count <= Self.smallTrip
            else { return [] }
            return state.takeBatch(configuration.completionBatchSize)
        }
        do {
            guard !outcomes.isEmpty else { return try await store.claim(claimRequest(group, limit: limit)) }
            let result: OutcomesThenClaim
            do {
                result = try await store.complete(outcomes, thenClaim: claimRequest(group, limit: limit))
            } catch {
                metrics.storeError("complete")
                requeue(outcomes)
                throw error
            }
            reportRefused(result.refused)
            if let error = result.claimError { throw error }
            return result.claimed
        } catch {
            start([], reserved: limit, group: group)
            throw error
        }
    }

    /// Records outcomes and claims jobs of `group` for the `limit` slots reserved, in one store call.
    ///
    /// - Throws: When the outcomes were not recorded.
    private func writeOutcomes(_ batch: [JobCompletion], thenClaim group: [String], limit: Int) async throws {
        let asked = ContinuousClock.now
        let result: OutcomesThenClaim
        do {
            result = try await store.complete(batch, thenClaim: claimRequest(group, limit: limit))
        } catch {
            start([], reserved: limit, group: group)
            slotSignal.signal()
            throw error
        }
        reportRefused(result.refused)
        if let error = result.claimError {
            metrics.storeError("claim")
            logger.warning("claim failed", metadata: ["error": "\(String(reflecting: error))"])
        }
        start(result.claimed, reserved: limit, group: group, askedAt: asked)
        // Slots reserved and not filled: the claim loop may be waiting for one to free up.
        if result.claimed.count < limit { slotSignal.signal() }
    }

    /// Puts outcomes that were not recorded back at the head of the queue, for the completion loop.
    private func requeue(_ batch: [JobCompletion]) {
        state.withLock { state in
            state.pending.insert(contentsOf: batch, at: 0)
            state.pendingSince = state.pendingSince ?? .now
        }
        completionSignal.signal()
    }

    /// Logs and counts outcomes the store refused.
    private func reportRefused(_ refused: [JobLease]) {
        for lease in refused {
            logger.warning(
                "outcome refused: the lease was lost",
                metadata: ["job": "\(lease.id)", "attempt": "\(lease.attempt)"]
            )
        }
        if !refused.isEmpty { metrics.refused.increment(by: refused.count) }
    }

    // MARK: - Heartbeats, cancels, recovery

    private func controlLoop() async {
        let clock = ContinuousClock()
        var lastCheck = clock.now
        var lastRecovery = clock.now - configuration.recoveryInterval
        var lastSweep = clock.now
        while true {
            let generation = controlSignal.generation
            let stopped = state.withLock { state -> Bool in
                if case .stopped = state.phase { return true }
                return false
            }
            if stopped || Task.isCancelled { return }
            let now = clock.now

            // The job's own timeout, and leases that could not be renewed in time.
            let timedOut = state.withLock { state -> [JobID] in
                state.running.compactMap { id, job in
                    job.stopReason == nil && job.deadline.map { $0 <= now } == true ? id : nil
                }
            }
            for id in timedOut { stop(id, reason: .timedOut) }
            stopJobsWithExpiredLeases(now: now)

            await heartbeatOrCheck(now: now, lastCheck: &lastCheck)

            if now - lastRecovery >= configuration.recoveryInterval {
                lastRecovery = now
                do {
                    let recovered = try await store.recoverExpiredLeases()
                    if recovered > 0 {
                        metrics.recovered.increment(by: recovered)
                        logger.info("recovered jobs of expired leases", metadata: ["jobs": "\(recovered)"])
                    }
                } catch where !Task.isCancelled {
                    metrics.storeError("recover")
                    logger.warning("lease recovery failed", metadata: ["error": "\(String(reflecting: error))"])
                } catch {
                    return
                }
            }
            if now - lastSweep >= .seconds(10) {
                lastSweep = now
                do {
                    try await store.resolveDependencies()
                } catch where !Task.isCancelled {
                    metrics.storeError("dependencies")
                    logger.warning("dependency sweep failed", metadata: ["error": "\(String(reflecting: error))"])
                } catch {
                    return
                }
            }
            await controlSignal.wait(after: generation, timeout: configuration.tick)
        }
    }

    /// Stops the jobs whose lease was not renewed for the lease's duration: the store may give them to
    /// another worker now.
    private func stopJobsWithExpiredLeases(now: ContinuousClock.Instant) {
        let expired = state.withLock { state -> [JobID] in
            state.running.compactMap { id, job in
                job.stopReason == nil && now - job.renewedAt > configuration.leaseDuration ? id : nil
            }
        }
        for id in expired { stop(id, reason: .leaseLost) }
    }

    /// Checks the leases every tick until the worker stops, whatever the control loop waits for.
    private func leaseWatchLoop() async {
        let clock = ContinuousClock()
        while !Task.isCancelled {
            let stopped = state.withLock { state -> Bool in
                if case .stopped = state.phase { return true }
                return false
            }
            if stopped { return }
            stopJobsWithExpiredLeases(now: clock.now)
            try? await Task.sleep(for: configuration.tick)
        }
    }

    /// Renews leases that are due and writes progress that changed; otherwise, when it is time, only
    /// reads which jobs were canceled or lost.
    private func heartbeatOrCheck(now: ContinuousClock.Instant, lastCheck: inout ContinuousClock.Instant) async {
        let (beats, versions, leases) = state.withLock {
            state -> ([JobHeartbeat], [JobID: Int], [JobLease]) in
            var beats: [JobHeartbeat] = []
            var versions: [JobID: Int] = [:]
            var leases: [JobLease] = []
            for (id, job) in state.running where job.stopReason == nil {
                leases.append(job.lease)
                var progress: JobProgress?
                if now - job.progressWrittenAt >= configuration.progressInterval, let unwritten = job.progress.unwritten() {
                    progress = unwritten.progress
                    versions[id] = unwritten.version
                }
                if progress != nil || now - job.renewedAt >= configuration.renewalInterval {
                    beats.append(JobHeartbeat(lease: job.lease, progress: progress))
                }
            }
            return (beats, versions, leases)
        }
        let check: LeaseCheck
        do {
            if !beats.isEmpty {
                check = try await store.heartbeat(beats, leaseDuration: configuration.leaseDuration)
                let lost = Set(check.lost.map(\.id))
                state.withLock { state in
                    for beat in beats where !lost.contains(beat.lease.id) {
                        guard state.running[beat.lease.id]?.lease == beat.lease else { continue }
                        state.running[beat.lease.id]?.renewedAt = now
                        if let version = versions[beat.lease.id] {
                            state.running[beat.lease.id]?.progressWrittenAt = now
                            state.running[beat.lease.id]?.progress.markWritten(version)
                        }
                    }
                }
                lastCheck = now
            } else if !leases.isEmpty, now - lastCheck >= configuration.cancelCheckInterval {
                check = try await store.checkLeases(leases)
                lastCheck = now
            } else {
                return
            }
        } catch {
            metrics.storeError(beats.isEmpty ? "check" : "heartbeat")
            logger.warning("heartbeat failed", metadata: ["error": "\(String(reflecting: error))"])
            return
        }
        for lease in check.lost {
            logger.warning("lease lost; stopping the job", metadata: ["job": "\(lease.id)", "attempt": "\(lease.attempt)"])
            stop(lease.id, reason: .leaseLost)
        }
        for id in check.cancelRequested {
            logger.info("cancel recorded in the store; stopping the job", metadata: ["job": "\(id)"])
            stop(id, reason: .canceledInStore)
        }
    }
}

extension JobWorker {
    /// The most jobs a trip to the store may hold for outcomes to ride along with a claim, or claims
    /// with outcomes. In a small trip the fixed cost (two thread hand-offs and a commit) is most of the
    /// time, and one trip instead of two nearly doubles an unbatched SQLite worker's throughput (6.5k
    /// to 9–10k jobs/s). A large batch's time is its rows: taking the other kind along only delays it
    /// (batched SQLite went from 52–57k to 42–50k jobs/s when every trip did).
    static let smallTrip = 16

    enum Phase {
        case created
        /// ``shutdown()`` came before ``run()``: `run()` returns at once (stopped, nothing to do).
        case shutDownBeforeRun
        case running
        /// Not claiming; running jobs may finish until the deadline.
        case draining(deadline: ContinuousClock.Instant)
        case stopped
    }

    typealias StopReason = JobStopReason

    struct RunningJob {
        var lease: JobLease
        var name: String
        var progress: ProgressBox
        var renewedAt: ContinuousClock.Instant
        var progressWrittenAt: ContinuousClock.Instant
        var deadline: ContinuousClock.Instant?
        var task: Task<Void, Never>?
        var stopReason: StopReason?
        /// The handler released its slot (``StoredJobContext/releaseSlot()``): the job counts in
        /// ``State/released``, not against the worker's limits.
        var released = false
    }

    struct State {
        var phase: Phase = .created
        /// Why an exit-when-idle worker gave up on its store: ``run()`` throws it once stopped.
        var storeFailure: (any Error)?
        var running: [JobID: RunningJob] = [:]
        var runningByName: [String: Int] = [:]
        var pending: [JobCompletion] = []
        var pendingSince: ContinuousClock.Instant?
        /// Handlers that ended and whose outcomes are not queued yet.
        var finishing = 0
        /// Slots held for claims under way (of all names, and of each name with a cap of its own).
        var reserved = 0
        var reservedByName: [String: Int] = [:]
        /// Running jobs whose handlers released their slot (at most `maximumReleasedJobs`).
        var released = 0
        /// Whether the last claim came back full: jobs probably wait, and outcome writes claim too.
        var backlog = false

        /// Slots that are taken: running jobs that hold theirs, and claims under way.
        var occupied: Int { running.count - released + reserved }

        /// Takes up to `limit` pending outcomes, oldest first.
        mutating func takeBatch(_ limit: Int) -> [JobCompletion] {
            let count = min(limit, pending.count)
            let batch = Array(pending.prefix(count))
            pending.removeFirst(count)
            pendingSince = pending.isEmpty ? nil : .now
            return batch
        }
    }
}
