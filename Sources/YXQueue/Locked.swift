import Foundation

/// A value behind a lock: all mutable state of an object in one struct, touched only inside
/// ``withLock(_:)``.
///
/// It has the shape of `Synchronization.Mutex`, but is built on `NSLock` (a pthread mutex): on Linux,
/// Thread Sanitizer cannot see `Mutex`, whose futex calls it does not intercept, and reports races on
/// correctly locked data. With a pthread mutex the whole suite can run under `--sanitize=thread`.
///
/// - Important: Never call user code (delegates, closures, overridable methods) inside `withLock`.
package final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    @inline(__always)
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
