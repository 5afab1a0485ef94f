import Foundation

/// A snapshot of a store for a `status` command: counts and units by state, the jobs running on each
/// worker with their progress, and the concurrency limits with their use.
///
/// It is `Codable` (``jsonData()`` is what `status --json` prints) and renders as a plain-text table
/// (``formattedTable()``).
public struct JobStoreStatus: Sendable, Hashable, Codable {
    /// One line per state.
    public struct StateSummary: Sendable, Hashable, Codable {
        /// The state.
        public var state: StoredJobState
        /// Jobs in this state.
        public var jobs: Int
        /// The sum of the units done that their workers recorded (bytes, for downloads).
        public var completedUnits: Int64
        /// The sum of the totals they announced.
        public var totalUnits: Int64

        /// A line of the states table.
        public init(state: StoredJobState, jobs: Int, completedUnits: Int64, totalUnits: Int64) {
            self.state = state
            self.jobs = jobs
            self.completedUnits = completedUnits
            self.totalUnits = totalUnits
        }
    }

    /// A running job as its worker last reported it.
    public struct RunningJob: Sendable, Hashable, Codable {
        /// The job.
        public var id: JobID
        /// Its name.
        public var name: String
        /// The attempt that runs.
        public var attempt: Int
        /// The progress its worker last wrote.
        public var progress: JobProgress
        /// When this attempt started.
        public var startedAt: Date?
        /// When its lease ends unless renewed.
        public var leaseUntil: Date?
        /// Whether a cancel was recorded (its worker is stopping it).
        public var cancelRequested: Bool

        /// A running job of the status.
        public init(
            id: JobID, name: String, attempt: Int, progress: JobProgress, startedAt: Date?, leaseUntil: Date?,
            cancelRequested: Bool
        ) {
            self.id = id
            self.name = name
            self.attempt = attempt
            self.progress = progress
            self.startedAt = startedAt
            self.leaseUntil = leaseUntil
            self.cancelRequested = cancelRequested
        }
    }

    /// The jobs one worker runs.
    public struct WorkerSummary: Sendable, Hashable, Codable {
        /// The worker's identity (host, process and a random part).
        public var worker: String
        /// Its running jobs, by identifier.
        public var jobs: [RunningJob]

        /// A worker of the status.
        public init(worker: String, jobs: [RunningJob]) {
            self.worker = worker
            self.jobs = jobs
        }
    }

    /// A concurrency limit and how much of it is in use.
    public struct LimitSummary: Sendable, Hashable, Codable {
        /// The concurrency key.
        public var key: String
        /// The most jobs of it that may run at once.
        public var limit: Int
        /// How many run now.
        public var running: Int

        /// A limit of the status.
        public init(key: String, limit: Int, running: Int) {
            self.key = key
            self.limit = limit
            self.running = running
        }
    }

    /// When the snapshot was taken (the store's clock).
    public var takenAt: Date
    /// Every state, in ``StoredJobState/allCases`` order, with zero lines included.
    public var states: [StateSummary]
    /// Available jobs whose not-before time has not come yet (counted in `available` too).
    public var scheduled: Int
    /// Workers with running jobs, by identity.
    public var workers: [WorkerSummary]
    /// The limits set on the store.
    public var limits: [LimitSummary]

    /// A snapshot as a store took it.
    public init(
        takenAt: Date, states: [StateSummary], scheduled: Int, workers: [WorkerSummary], limits: [LimitSummary]
    ) {
        self.takenAt = takenAt
        self.states = states
        self.scheduled = scheduled
        self.workers = workers
        self.limits = limits
    }

    /// The number of jobs in `state`.
    public func count(_ state: StoredJobState) -> Int {
        states.first { $0.state == state }?.jobs ?? 0
    }

    /// All jobs of the store.
    public var total: Int { states.reduce(0) { $0 + $1.jobs } }

    /// Jobs that have not reached a terminal state.
    public var live: Int { StoredJobState.live.reduce(0) { $0 + count($1) } }
}
