/// A value behind a mutex of ``StripedLocks/jobs``: ``Locked`` without a mutex of its own.
///
/// A job's state is made with the job on the thread that adds it, and freed on the thread that ends it.
/// Without the 40 bytes of a mutex, and with its rarely used parts in boxes of their own, it fits in
/// the allocator's smallest chunks, which glibc frees from another thread without its arena's lock
/// (see ``StripedLocks``).
///
/// - Important: Never call user code (delegates, closures, overridable methods) inside `withLock`, nor
///   lock another value of this kind: two of them may share a mutex.
struct StripedLocked<Value>: @unchecked Sendable {
    private let storage: Storage

    /// - Parameter value: The initial value, moved into the storage.
    init(_ value: consuming Value) {
        storage = Storage(value)
    }

    /// The object that holds the value (for a test of its size).
    var storageObject: AnyObject { storage }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try storage.withLock(body)
    }

    private final class Storage {
        /// Touched only under the stripe's mutex: no run-time exclusivity check is needed, nor made.
        @exclusivity(unchecked) private var value: Value

        init(_ value: consuming Value) {
            self.value = value
        }

        @inline(__always)
        func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
            try StripedLocks.jobs.withLock(for: self) { try body(&value) }
        }
    }
}
