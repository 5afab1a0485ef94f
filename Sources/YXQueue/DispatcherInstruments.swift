import CoreMetrics
import Dispatch
import Logging

/// A dispatcher's logs and metrics: what happened to its jobs, through swift-log and swift-metrics.
///
/// Metrics, each with the dimensions `dispatcher` and `job` (the job's ``Job/name``):
/// - counters `yxqueue.jobs.started`, `yxqueue.jobs.finished`, `yxqueue.jobs.failed`,
///   `yxqueue.jobs.canceled` (dropped jobs count as canceled), `yxqueue.jobs.retries`;
/// - timers `yxqueue.job.queued` (from start to the first operation executing) and
///   `yxqueue.job.running` (from then to the end).
///
/// Logs: start, first operation and end of each attempt at debug; retries at info; failures at warning.
/// The metric objects of a job name are made once and kept, so a job costs a few calls into the metrics
/// backend, not a lookup. With no metrics backend (swift-metrics' no-op factory, the default until a
/// program bootstraps one) a job does no metrics work at all: bootstrap `MetricsSystem` before making
/// dispatchers, or pass a factory.
final class DispatcherInstruments: Sendable {
    private let dispatcher: String
    private let logger: Logger
    private let factory: any MetricsFactory
    private let metrics = Locked<[String: JobMetrics]>([:])
    /// Whether metrics go anywhere (not swift-metrics' no-op factory).
    private let measures: Bool
    /// Whether logs go anywhere (not swift-log's no-op handler, the dispatcher's default): a logger asks
    /// its handler for its level at each call, through an existential, three times per job.
    private let logs: Bool

    init(dispatcher: String, logger: Logger, metricsFactory: (any MetricsFactory)?) {
        self.dispatcher = dispatcher
        self.logger = logger
        let factory = metricsFactory ?? MetricsSystem.factory
        self.factory = factory
        self.measures = !(factory is NOOPMetricsHandler)
        self.logs = !(logger.handler is SwiftLogNoOpLogHandler)
    }

    /// Now, in uptime nanoseconds, for a job's queued and running timers; 0 when metrics go nowhere, so
    /// that a job reads no clock for timers nobody records.
    var timerClock: UInt64 {
        measures ? DispatchTime.now().uptimeNanoseconds : 0
    }

    /// The counters and timers of one job name.
    final class JobMetrics: Sendable {
        let started: Counter
        let finished: Counter
        let failed: Counter
        let canceled: Counter
        let retries: Counter
        let queued: Timer
        let running: Timer

        init(dispatcher: String, job: String, factory: any MetricsFactory) {
            let dimensions = [("dispatcher", dispatcher), ("job", job)]
            started = Counter(label: "yxqueue.jobs.started", dimensions: dimensions, factory: factory)
            finished = Counter(label: "yxqueue.jobs.finished", dimensions: dimensions, factory: factory)
            failed = Counter(label: "yxqueue.jobs.failed", dimensions: dimensions, factory: factory)
            canceled = Counter(label: "yxqueue.jobs.canceled", dimensions: dimensions, factory: factory)
            retries = Counter(label: "yxqueue.jobs.retries", dimensions: dimensions, factory: factory)
            queued = Timer(label: "yxqueue.job.queued", dimensions: dimensions, factory: factory)
            running = Timer(label: "yxqueue.job.running", dimensions: dimensions, factory: factory)
        }
    }

    private func metrics(for name: String) -> JobMetrics {
        if let known = metrics.withLock({ $0[name] }) { return known }
        let made = JobMetrics(dispatcher: dispatcher, job: name, factory: factory)
        return metrics.withLock { table in
            if let known = table[name] { return known }
            table[name] = made
            return made
        }
    }

    /// Counts the start; returns the job's metrics, which the job keeps for the rest of the attempt (nil
    /// when metrics go nowhere).
    func jobStarted(_ job: Job, attempt: Int) -> JobMetrics? {
        if logs { logger.debug("job started", metadata: ["job": "\(job.name)#\(job.tag)", "attempt": "\(attempt)"]) }
        guard measures else { return nil }
        let table = metrics(for: job.name)
        table.started.increment()
        return table
    }

    func jobBeganExecuting(_ job: Job, attempt: Int, queuedNanoseconds: UInt64, metrics known: JobMetrics?) {
        if measures { (known ?? metrics(for: job.name)).queued.recordNanoseconds(Int64(clamping: queuedNanoseconds)) }
        if logs { logger.trace("job executing", metadata: ["job": "\(job.name)#\(job.tag)", "attempt": "\(attempt)"]) }
    }

    func jobWillRetry(_ job: Job, attempt: Int, after delay: Duration, error: any Error, metrics known: JobMetrics?) {
        if measures { (known ?? metrics(for: job.name)).retries.increment() }
        guard logs else { return }
        logger.info(
            "job will retry",
            metadata: [
                "job": "\(job.name)#\(job.tag)", "attempt": "\(attempt)", "delay": "\(delay)", "error": "\(error)",
            ])
    }

    func jobEnded(
        _ job: Job, attempt: Int, as state: JobState, error: (any Error)?, ranNanoseconds: UInt64?,
        metrics known: JobMetrics?
    ) {
        let table: JobMetrics? = measures ? known ?? metrics(for: job.name) : nil
        if let ranNanoseconds { table?.running.recordNanoseconds(Int64(clamping: ranNanoseconds)) }
        switch state {
        case .finished:
            table?.finished.increment()
            guard logs else { return }
            logger.debug("job finished", metadata: ["job": "\(job.name)#\(job.tag)", "attempt": "\(attempt)"])
        case .failed:
            table?.failed.increment()
            guard logs else { return }
            logger.warning(
                "job failed",
                metadata: [
                    "job": "\(job.name)#\(job.tag)", "attempt": "\(attempt)", "error": "\(error.map { "\($0)" } ?? "")",
                ])
        default:
            table?.canceled.increment()
            guard logs else { return }
            logger.debug("job \(state)", metadata: ["job": "\(job.name)#\(job.tag)", "attempt": "\(attempt)"])
        }
    }
}
