import Logging
@_spi(YXQueueInternals) import YXQueue

/// What a running handler of a stored job knows of it and how it reports progress.
///
/// The store-side counterpart of YXQueue's `JobContext` (what a step's body receives in process); a
/// ``JobDefinition`` run through a dispatcher (``JobRegistry/register(_:on:maximumConcurrentJobs:decoder:encoder:)``)
/// gets YXQueue's context in its steps, and its progress reaches this one.
///
/// Progress is kept in memory and written to the store by the worker's heartbeat, at most once per
/// ``JobWorker/Configuration/progressInterval`` per job (so a flood of updates costs nothing), and
/// renews the lease on the way. Any process can read it with ``JobStore/status()``.
///
/// Cancel reaches the handler as Swift task cancellation: a cancel recorded in the store, a lost lease,
/// the job's timeout and the worker's shutdown all cancel the handler's task. Check
/// `Task.isCancelled` or `try Task.checkCancellation()` in long loops, and throw `CancellationError`.
///
/// ```swift
/// registry.register("copy") { payload, context in
///     for chunk in 0..<100 {
///         try Task.checkCancellation()
///         try await copy(chunk)
///         context.reportProgress(completedUnits: Int64(chunk + 1) * chunkSize, totalUnits: 100 * chunkSize)
///     }
/// }
/// ```
public struct StoredJobContext: Sendable {
    /// The claimed job: its identifier, attempt, name, payload and options.
    public let job: ClaimedJob
    private let workerLogger: Logger
    let progressBox: ProgressBox
    private let slotRelease: @Sendable () -> Bool

    init(
        job: ClaimedJob, logger: Logger, progressBox: ProgressBox, releaseSlot: @escaping @Sendable () -> Bool = { false }
    ) {
        self.job = job
        self.workerLogger = logger
        self.progressBox = progressBox
        self.slotRelease = releaseSlot
    }

    /// The worker's logger with the job's identifier, name and attempt as metadata.
    public var logger: Logger {
        // Made when asked for: most handlers never log, and a worker may run thousands of jobs a second.
        var logger = workerLogger
        logger[metadataKey: "job"] = "\(job.id)"
        logger[metadataKey: "job.name"] = "\(job.name)"
        logger[metadataKey: "attempt"] = "\(job.attempt)"
        return logger
    }

    /// Why the worker canceled the handler's task, once it did; `nil` while the job runs on. A handler
    /// that sees cancellation can tell a lost lease (the job runs again elsewhere) from a cancel in the
    /// store, its timeout or the worker's shutdown, and say so.
    public var stopReason: JobStopReason? { progressBox.stopReason }

    /// The job's identifier.
    public var id: JobID { job.id }
    /// The attempt number (1 for the first run; it also counts runs that a lost worker left unfinished).
    public var attempt: Int { job.attempt }

    /// Reports how far the job is, as a fraction between 0 and 1.
    public func reportProgress(_ fraction: Double) {
        progressBox.update(JobProgress(fraction: fraction))
    }

    /// Reports how far the job is in units (bytes…); the fraction follows when the total is known.
    public func reportProgress(completedUnits: Int64, totalUnits: Int64?) {
        progressBox.update(JobProgress(completedUnits: completedUnits, totalUnits: totalUnits))
    }

    /// Reports progress as a whole.
    public func reportProgress(_ progress: JobProgress) {
        progressBox.update(progress)
    }

    /// Tells the worker that the rest of this job needs none of what its limits share out (a download whose
    /// bytes are all in and that only waits for the disk, say): the worker may claim another job in its
    /// place. The job goes on under its lease, with heartbeats, cancel and progress, and ends as any job.
    ///
    /// At most ``JobWorker/Configuration/maximumReleasedJobs`` jobs of a worker are released at once (0 by
    /// default). Returns whether this one was: false when that many are, when it was already, or when the
    /// worker is stopping or stopped the job.
    ///
    /// ```swift
    /// registry.register("convert") { payload, context in
    ///     let output = try await convert(payload)     // the CPU-heavy part, under the worker's limit
    ///     _ = context.releaseSlot()                   // the upload only waits on the network
    ///     try await upload(output)
    /// }
    /// ```
    @discardableResult
    public func releaseSlot() -> Bool {
        slotRelease()
    }
}

/// The latest progress of one running job and which version of it the store has; and why the worker
/// stopped it, once it did. The worker and the handler's context share it.
final class ProgressBox: Sendable {
    private struct State {
        var progress: JobProgress?
        var version = 0
        var writtenVersion = 0
        var stopReason: JobStopReason?
    }

    private let state = Locked(State())

    /// Records why the worker stops the job (before it cancels the handler's task).
    func stop(because reason: JobStopReason) {
        state.withLock { $0.stopReason = reason }
    }

    var stopReason: JobStopReason? { state.withLock { $0.stopReason } }

    func update(_ progress: JobProgress) {
        state.withLock { state in
            state.progress = progress
            state.version += 1
        }
    }

    /// The progress if it changed since the last ``markWritten(_:)``, with its version.
    func unwritten() -> (progress: JobProgress, version: Int)? {
        state.withLock { state in
            guard state.version != state.writtenVersion, let progress = state.progress else { return nil }
            return (progress, state.version)
        }
    }

    /// Remembers that `version` reached the store.
    func markWritten(_ version: Int) {
        state.withLock { state in
            state.writtenVersion = max(state.writtenVersion, version)
        }
    }

    /// The latest progress, written or not.
    var latest: JobProgress? {
        state.withLock { $0.progress }
    }
}
