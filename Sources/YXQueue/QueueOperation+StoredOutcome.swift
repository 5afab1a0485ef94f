extension QueueOperation {
    /// How an operation ended, as its state keeps it: one word. The outcomes of most operations (none
    /// yet, a success without a result, a cancel) need no allocation; another one is kept in a box.
    ///
    /// An ``Outcome`` kept inline took 33 bytes, which made an operation 160 bytes: above the size that
    /// glibc's allocator frees without its arena lock (fast bins, up to 120 bytes). An operation is made
    /// on the thread that adds its job and freed on the thread that ends it, so its free took the lock
    /// that the adding thread's next allocation needed (issue #14: one such allocation per job cost the
    /// no-op benchmark about 18 %).
    enum StoredOutcome {
        case none
        case succeededWithoutResult
        case canceled
        case other(Box)

        final class Box: Sendable {
            let outcome: Outcome
            init(_ outcome: Outcome) { self.outcome = outcome }
        }

        init(_ outcome: Outcome) {
            switch outcome {
            case .success(nil): self = .succeededWithoutResult
            case .canceled: self = .canceled
            default: self = .other(Box(outcome))
            }
        }

        /// Whether no outcome was recorded yet.
        var isNone: Bool {
            if case .none = self { return true }
            return false
        }

        var outcome: Outcome? {
            switch self {
            case .none: nil
            case .succeededWithoutResult: .success(nil)
            case .canceled: .canceled
            case .other(let box): box.outcome
            }
        }

        /// The result, when the operation succeeded with one.
        var result: (any Sendable)? {
            if case .other(let box) = self, case .success(let value) = box.outcome { return value }
            return nil
        }

        /// The error, when the operation failed.
        var error: (any Error)? {
            if case .other(let box) = self, case .failure(let error) = box.outcome { return error }
            return nil
        }
    }

    /// The identifier of the resource an operation works on, boxed: most operations have none, and an
    /// optional string inline took 16 bytes of each operation (see ``StoredOutcome``).
    final class ResourceIdentifier: Sendable {
        let value: String
        init(_ value: String) { self.value = value }
    }
}
