import Foundation

/// A value guarded by one `NSLock`: the single home of a server's mutable state.
///
/// Every read and write goes through ``withLock(_:)``, so the value is only ever touched by one
/// thread at a time. The lock is a plain `NSLock` (a pthread mutex underneath) rather than
/// `Synchronization.Mutex`, because Thread Sanitizer on Linux understands pthread mutexes and
/// reports false races through `Mutex`.
///
/// - Important: Never call out to code you do not control (callbacks, continuations, channel
///   operations) from inside the closure: compute what has to happen, return it, and act after
///   the lock is released.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// Creates a box holding `value`.
    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value and returns what it returns.
    ///
    /// - Parameter body: Reads or mutates the value; it must be short and must not block.
    /// - Returns: The result of `body`.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        self.lock.lock()
        defer { self.lock.unlock() }
        return try body(&self.value)
    }
}
