/// The lifecycle of a ``Job``.
///
/// ```
/// ready ──▶ executing ──▶ finished
///   │           ├──────▶ failed ─────▶ ready (restart)
///   ├───────────┴──────▶ canceled ───▶ ready (restart)
///   └──▶ dropped ◀── (from any state but dropped)
/// ```
///
/// Every transition goes through ``canTransition(to:)``; terminal states are final until an explicit
/// restart, and ``dropped`` is final for good.
public enum JobState: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Created, or accepted by a dispatcher and waiting for its first operation to run.
    case ready
    /// At least one of its operations has started.
    case executing
    /// Canceled before it could finish; can be restarted.
    case canceled
    /// Finished successfully; its result is available.
    case finished
    /// Failed (after its retries, if it has a retry policy); its error is available; can be restarted.
    case failed
    /// Removed from its dispatcher for good; cannot be restarted.
    case dropped

    /// Whether the state ends an attempt.
    public var isTerminal: Bool {
        switch self {
        case .ready, .executing: false
        case .canceled, .finished, .failed, .dropped: true
        }
    }

    /// Whether a job in a terminal state may be started again.
    public var isRestartable: Bool { self == .canceled || self == .failed }

    /// The one table of legal transitions.
    public func canTransition(to next: JobState) -> Bool {
        switch (self, next) {
        case (.ready, .executing), (.ready, .canceled), (.ready, .finished), (.ready, .failed):
            true
        case (.executing, .finished), (.executing, .failed), (.executing, .canceled):
            true
        case (.canceled, .ready), (.failed, .ready):
            true
        case (.dropped, _):
            false
        case (_, .dropped):
            true
        default:
            false
        }
    }

    public var description: String { rawValue }
}
