extension JobEvent {
    /// Which events an observer wants: pass them to ``Job/observe(_:_:)`` or
    /// ``Dispatcher/observe(_:_:)``.
    ///
    /// An event that no observer, delegate or stream of the job wants is never queued: it costs no hop
    /// to the callback queue. Progress is the event this matters for: it is reported while the work
    /// runs, and an observer that only counts finished jobs would otherwise wake its queue for each.
    ///
    /// ```swift
    /// let token = dispatcher.observe(.terminal) { job, event in
    ///     if case .failed(let error) = event { print("\(job.name) failed: \(error)") }
    /// }
    /// ```
    public struct Kinds: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8

        public init(rawValue: UInt8) {
            self.rawValue = rawValue
        }

        /// ``JobEvent/started``.
        public static let started = Kinds(rawValue: 1 << 0)
        /// ``JobEvent/progress(_:)``.
        public static let progress = Kinds(rawValue: 1 << 1)
        /// ``JobEvent/retrying(after:error:)``.
        public static let retrying = Kinds(rawValue: 1 << 2)
        /// ``JobEvent/finished(_:)``.
        public static let finished = Kinds(rawValue: 1 << 3)
        /// ``JobEvent/failed(_:)``.
        public static let failed = Kinds(rawValue: 1 << 4)
        /// ``JobEvent/canceled``.
        public static let canceled = Kinds(rawValue: 1 << 5)

        /// The events that end an attempt: finished, failed and canceled.
        public static let terminal: Kinds = [.finished, .failed, .canceled]
        /// Every event.
        public static let all: Kinds = [.started, .progress, .retrying, .terminal]
    }

    /// This event's kind.
    public var kind: Kinds {
        switch self {
        case .started: .started
        case .progress: .progress
        case .retrying: .retrying
        case .finished: .finished
        case .failed: .failed
        case .canceled: .canceled
        }
    }
}
