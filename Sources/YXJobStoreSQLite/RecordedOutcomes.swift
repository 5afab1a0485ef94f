import GRDB
import YXJobStore

/// The outcomes a store call recorded: the attempts it accepted, and the ended jobs whose dependents
/// must be released or canceled.
package struct RecordedOutcomes: Sendable {
    /// A row the outcome statement changed.
    package struct Row: Sendable {
        var id: Int64
        var state: StoredJobState
        var hasDependents: Bool
    }

    /// The attempts whose outcome was recorded.
    private(set) var accepted: Set<JobLease> = []
    /// Jobs that succeeded and have dependents.
    private(set) var succeededWithDependents: [Int64] = []
    /// Jobs that failed, were canceled or discarded, and have dependents.
    private(set) var failedWithDependents: [Int64] = []

    /// Whether some ended job has dependents to settle.
    var endedWithDependents: Bool { !succeededWithDependents.isEmpty || !failedWithDependents.isEmpty }

    /// Adds the rows a statement changed for these completions.
    mutating func add(_ rows: [Row], of chunk: ArraySlice<JobCompletion>) {
        let byID = Dictionary(chunk.map { ($0.lease.id.rawValue, $0.lease) }, uniquingKeysWith: { first, _ in first })
        for row in rows {
            if let lease = byID[row.id] { accepted.insert(lease) }
            guard row.hasDependents else { continue }
            switch row.state {
            case .succeeded: succeededWithDependents.append(row.id)
            case .failed, .canceled, .discarded: failedWithDependents.append(row.id)
            default: break
            }
        }
    }

    /// Releases the dependents of the jobs that succeeded and cancels those of the others, on the
    /// writer connection inside a transaction.
    func settleDependents(_ db: Database) throws {
        try SQLiteJobStore.releaseDependents(of: succeededWithDependents, db)
        try SQLiteJobStore.cancelDependents(of: failedWithDependents, now: SQLiteTime.now, db)
    }
}
