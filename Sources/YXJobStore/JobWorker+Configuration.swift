import Foundation

extension JobWorker {
    /// How a worker claims, heartbeats, completes and shuts down.
    ///
    /// The defaults suit most programs: ten jobs at once, claims of up to ten, completions written in
    /// groups of up to a hundred, a dead worker's jobs claimable again within 30 seconds.
    public struct Configuration: Sendable {
        /// The worker's identity, written as the owner of every job it claims. Unique per process run:
        /// host name, process id and a random part by default.
        public var workerID: String
        /// The most jobs this worker runs at once, all names together.
        public var maximumConcurrentJobs: Int
        /// How many jobs may run beyond ``maximumConcurrentJobs`` at once, each having said that the rest
        /// of its work needs no slot (``StoredJobContext/releaseSlot()``): a download whose bytes are in and
        /// that only waits for the disk, say. 0 (the default) releases none.
        public var maximumReleasedJobs: Int
        /// The most jobs one claim takes. 1 claims job by job.
        public var claimBatchSize: Int
        /// The most outcomes one write records. Outcomes that end while a write is under way share the
        /// next one; 1 writes them one by one.
        public var completionBatchSize: Int
        /// How long an outcome may wait for others to share its write (0: written as soon as the
        /// previous write is done, or with the next claim if that comes first). With a delay, outcomes
        /// do not ride along with claims.
        public var completionDelay: Duration
        /// The longest time a dead worker's jobs stay unclaimable: the lease is 80 % of it and every
        /// live worker looks for expired leases every tenth of it (at most every second).
        public var recoveryBound: Duration
        /// How often the worker asks the store whether its running jobs were canceled.
        public var cancelCheckInterval: Duration
        /// The shortest time between two progress writes of one job.
        public var progressInterval: Duration
        /// The longest wait between two looks at the store when no wake-up comes (randomized by ±20 %).
        public var pollInterval: Duration
        /// How long a graceful shutdown lets running jobs finish before it cancels them and gives them
        /// back to the store.
        public var shutdownGracePeriod: Duration
        /// Stop by itself once no job of its names is waiting, available or running anywhere; or, with
        /// an error, once its claims kept failing (it cannot tell whether jobs are left).
        public var exitWhenIdle: Bool
        /// Also claim jobs whose name no handler has, and discard them. Only for a worker that knows
        /// every job name of its store: another worker's jobs would be discarded too.
        public var discardUnknownJobs: Bool
        /// Told when the store keeps refusing claims, and when it answers again: called once with the
        /// last error after ``JobWorker/claimFailuresBeforeGivingUp`` claims in a row failed (a worker
        /// that does not exit when idle keeps trying), then once with `nil` when a claim succeeds. For a
        /// program to tell its user without a log; `nil` by default.
        ///
        /// ```swift
        /// configuration.claimTrouble = { error in
        ///     if let error { print("the store refuses claims (\(error)); still trying") } else { print("the store answers again") }
        /// }
        /// ```
        public var claimTrouble: (@Sendable ((any Error)?) -> Void)?

        /// Default settings; see each property.
        public init(
            workerID: String = JobWorker.makeWorkerID(),
            maximumConcurrentJobs: Int = 10,
            maximumReleasedJobs: Int = 0,
            claimBatchSize: Int = 10,
            completionBatchSize: Int = 100,
            completionDelay: Duration = .zero,
            recoveryBound: Duration = .seconds(30),
            cancelCheckInterval: Duration = .milliseconds(500),
            progressInterval: Duration = .seconds(1),
            pollInterval: Duration = .seconds(1),
            shutdownGracePeriod: Duration = .seconds(10),
            exitWhenIdle: Bool = false,
            discardUnknownJobs: Bool = false
        ) {
            self.workerID = workerID
            self.maximumConcurrentJobs = maximumConcurrentJobs
            self.maximumReleasedJobs = maximumReleasedJobs
            self.claimBatchSize = claimBatchSize
            self.completionBatchSize = completionBatchSize
            self.completionDelay = completionDelay
            self.recoveryBound = recoveryBound
            self.cancelCheckInterval = cancelCheckInterval
            self.progressInterval = progressInterval
            self.pollInterval = pollInterval
            self.shutdownGracePeriod = shutdownGracePeriod
            self.exitWhenIdle = exitWhenIdle
            self.discardUnknownJobs = discardUnknownJobs
        }

        /// The lease a claim takes: 80 % of the recovery bound.
        public var leaseDuration: Duration { max(.milliseconds(200), recoveryBound * 0.8) }
        /// How often a running job's lease is renewed: a quarter of the lease.
        var renewalInterval: Duration { leaseDuration / 4 }
        /// How often the worker looks for other workers' expired leases.
        var recoveryInterval: Duration { min(.seconds(1), max(.milliseconds(50), recoveryBound / 10)) }
        /// The control loop's period.
        var tick: Duration { max(.milliseconds(20), min(cancelCheckInterval, renewalInterval, recoveryInterval)) }

        /// Settings with out-of-range values clamped.
        var clamped: Configuration {
            var copy = self
            copy.maximumConcurrentJobs = max(1, maximumConcurrentJobs)
            copy.maximumReleasedJobs = max(0, maximumReleasedJobs)
            copy.claimBatchSize = max(1, claimBatchSize)
            copy.completionBatchSize = max(1, completionBatchSize)
            copy.completionDelay = max(.zero, completionDelay)
            copy.recoveryBound = max(.milliseconds(250), recoveryBound)
            copy.cancelCheckInterval = max(.milliseconds(10), cancelCheckInterval)
            copy.progressInterval = max(.zero, progressInterval)
            copy.pollInterval = max(.milliseconds(10), pollInterval)
            copy.shutdownGracePeriod = max(.zero, shutdownGracePeriod)
            return copy
        }
    }

    /// A worker identity unique to this process run: `host:pid:random`.
    public static func makeWorkerID() -> String {
        let random = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        return "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier):\(random)"
    }
}
