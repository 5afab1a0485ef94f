import Metrics
@_spi(YXQueueInternals) import YXQueue

/// The worker's counters and timers, made once per job name (swift-metrics).
///
/// - `yxjobstore.jobs` (counter; dimensions `name`, `outcome`: `succeeded`, `retried`, `failed`,
///   `canceled`, `discarded`, `released`, `lease_lost`): how attempts ended on this worker,
/// - `yxjobstore.outcomes.refused` (counter): outcomes the store refused because the lease was lost,
/// - `yxjobstore.claimed` (counter; `name`),
/// - `yxjobstore.job.queued` (timer; `name`): from the time the job was ready to its start,
/// - `yxjobstore.job.duration` (timer; `name`): the handler's run,
/// - `yxjobstore.leases.recovered` (counter): other workers' expired leases this worker recovered,
/// - `yxjobstore.store.errors` (counter; `operation`): store calls that failed and were retried.
final class JobWorkerMetrics: Sendable {
    struct PerName: Sendable {
        var claimed: Counter
        var queued: Metrics.Timer
        var duration: Metrics.Timer
        var outcomes: [String: Counter]

        func claimed(queuedSeconds: Double) {
            claimed.increment()
            queued.recordNanoseconds(Int64(max(0, queuedSeconds) * 1e9))
        }

        func ran(duration: Duration) {
            let parts = duration.components
            self.duration.recordNanoseconds(parts.seconds * 1_000_000_000 + parts.attoseconds / 1_000_000_000)
        }

        func outcome(_ outcome: String) {
            outcomes[outcome]?.increment()
        }
    }

    private let factory: any MetricsFactory
    private let perName = Locked([String: PerName]())
    private let errors = Locked([String: Counter]())
    let recovered: Counter
    let refused: Counter

    init(factory: any MetricsFactory) {
        self.factory = factory
        recovered = Counter(label: "yxjobstore.leases.recovered", factory: factory)
        refused = Counter(label: "yxjobstore.outcomes.refused", factory: factory)
    }

    static let outcomes = ["succeeded", "retried", "failed", "canceled", "discarded", "released", "lease_lost"]

    /// The metrics of one job name, made on first use.
    func metrics(for name: String) -> PerName {
        if let existing = perName.withLock({ $0[name] }) { return existing }
        // Made outside the lock: a metrics factory is user code.
        var outcomes: [String: Counter] = [:]
        for outcome in Self.outcomes {
            outcomes[outcome] = Counter(
                label: "yxjobstore.jobs",
                dimensions: [("name", name), ("outcome", outcome)],
                factory: factory
            )
        }
        let made = PerName(
            claimed: Counter(label: "yxjobstore.claimed", dimensions: [("name", name)], factory: factory),
            queued: Metrics.Timer(label: "yxjobstore.job.queued", dimensions: [("name", name)], factory: factory),
            duration: Metrics.Timer(label: "yxjobstore.job.duration", dimensions: [("name", name)], factory: factory),
            outcomes: outcomes
        )
        return perName.withLock { table in
            if let existing = table[name] { return existing }
            table[name] = made
            return made
        }
    }

    func storeError(_ operation: String) {
        let counter =
            errors.withLock { $0[operation] }
            ?? {
                let made = Counter(
                    label: "yxjobstore.store.errors",
                    dimensions: [("operation", operation)],
                    factory: factory
                )
                return errors.withLock { table in
                    if let existing = table[operation] { return existing }
                    table[operation] = made
                    return made
                }
            }()
        counter.increment()
    }
}
