/// How far a running job is: a fraction, and optionally units such as bytes.
public struct JobProgress: Sendable, Hashable, Codable {
    /// Between 0 and 1; `nil` when unknown.
    public var fraction: Double?
    /// Units done (bytes downloaded, rows written…); `nil` when the job does not count units.
    public var completedUnits: Int64?
    /// Units in all, when known.
    public var totalUnits: Int64?

    /// Progress as given; a fraction is clamped to 0...1 (a non-finite one becomes 0).
    public init(fraction: Double? = nil, completedUnits: Int64? = nil, totalUnits: Int64? = nil) {
        self.fraction = fraction.map { $0.isFinite ? min(1, max(0, $0)) : 0 }
        self.completedUnits = completedUnits
        self.totalUnits = totalUnits
    }

    /// Progress counted in units; the fraction follows from them when the total is known.
    public init(completedUnits: Int64, totalUnits: Int64?) {
        let fraction: Double? =
            if let totalUnits, totalUnits > 0 { Double(completedUnits) / Double(totalUnits) } else { nil }
        self.init(fraction: fraction, completedUnits: completedUnits, totalUnits: totalUnits)
    }

    /// The progress of a job that succeeded: a fraction of 1, and all of its units when their total
    /// is known (the units it counted otherwise).
    ///
    /// - Parameter last: The job's last reported progress, if any.
    public static func completed(after last: JobProgress?) -> JobProgress {
        let units = last?.totalUnits ?? last?.completedUnits
        return JobProgress(fraction: 1, completedUnits: units, totalUnits: last?.totalUnits ?? units)
    }
}

/// A worker's sign of life for one attempt: renews its lease, and records its progress when given.
public struct JobHeartbeat: Sendable, Hashable {
    /// The attempt whose lease to renew.
    public var lease: JobLease
    /// Progress to record with it, if it changed since the last heartbeat.
    public var progress: JobProgress?

    /// A heartbeat of the attempt that `lease` names, with its progress if it changed.
    public init(lease: JobLease, progress: JobProgress? = nil) {
        self.lease = lease
        self.progress = progress
    }
}

/// What ``JobStore/heartbeat(_:leaseDuration:)`` and ``JobStore/checkLeases(_:)`` found.
public struct LeaseCheck: Sendable, Hashable {
    /// Attempts the worker no longer owns (the lease expired and the job was rescued, or it ended):
    /// the worker stops their handlers and records nothing for them.
    public var lost: [JobLease]
    /// Jobs still owned whose cancel was recorded: the worker cancels their handlers.
    public var cancelRequested: [JobID]

    /// A result of heartbeats or checks.
    public init(lost: [JobLease] = [], cancelRequested: [JobID] = []) {
        self.lost = lost
        self.cancelRequested = cancelRequested
    }
}
