/// Where a persistent job is in its life.
///
/// ```
/// waiting ──prerequisites succeeded──▶ available ──claimed──▶ running ──▶ succeeded
///    │                                   ▲   │                  │   ├──▶ failed     (no attempts left)
///    │                                   │   │                  │   ├──▶ canceled   (cancel recorded)
///    │                                   │   │                  │   └──▶ discarded  (unknown name, bad parameters)
///    │                                   └───┼── retry, lease expired, released ◀─┘
///    └──a prerequisite did not succeed──▶ canceled ◀──cancel──┘
/// ```
///
/// The four terminal states are final: a job reaches exactly one of them once.
///
/// Named apart from YXQueue's `JobState` (the life of one in-process attempt: ready, executing,
/// finished…), which a program that uses both modules also sees: the types of this module that would
/// share a name with a YXQueue type carry the `Stored` prefix (``StoredJobState``, ``StoredJobContext``).
public enum StoredJobState: String, Sendable, Codable, CaseIterable, Hashable {
    /// Enqueued with prerequisites that have not all succeeded yet.
    case waiting
    /// Ready to be claimed once its not-before time has come (also after a failed attempt, for the retry).
    case available
    /// Claimed by a worker, under a lease that the worker's heartbeat renews.
    case running
    /// Its handler returned.
    case succeeded
    /// Its handler failed on its last allowed attempt, or with an error that must not be retried.
    case failed
    /// Canceled before it ran, while it ran, or because a prerequisite did not succeed.
    case canceled
    /// Could not be run at all: no handler has its name, or its parameters do not decode.
    case discarded

    /// Whether the state is final.
    public var isTerminal: Bool {
        switch self {
        case .waiting, .available, .running: false
        case .succeeded, .failed, .canceled, .discarded: true
        }
    }

    /// The states a job can still leave: the states over which a unique key is unique.
    public static let live: [StoredJobState] = [.waiting, .available, .running]

    /// The final states.
    public static let terminal: [StoredJobState] = [.succeeded, .failed, .canceled, .discarded]
}
