#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value behind a lock: all mutable state of an object in one struct, touched only inside
/// ``withLock(_:)``.
///
/// It has the shape of `Synchronization.Mutex`, but is built on a pthread mutex: on Linux, Thread
/// Sanitizer cannot see `Mutex` (its futex calls are not intercepted) and reports races on correctly
/// locked data, while pthread mutexes are understood, so the whole suite runs under
/// `--sanitize=thread`. The value and the mutex share one allocation.
///
/// - Important: Never call user code (delegates, closures, overridable methods) inside `withLock`.
///
/// It is public behind an SPI (`@_spi(YXQueueInternals) import YXQueue`), not `package`, so that the
/// other modules of this package get it specialized and inlined. This toolchain (Swift 6.3) does not
/// serialize the bodies of `package` declarations, `@inlinable` or not, for other modules: as a
/// `package` type, every lock taken in `YXDownload` went through the generic `withLock<Result>`, and
/// every `Locked` made there looked up `Storage<Value>`'s metadata (about 580 instructions). A run of
/// 500 files spent 2.2 M instructions (1.1 % of the run) on that (callgrind, 2026-11-28).
@_spi(YXQueueInternals) public struct Locked<Value>: @unchecked Sendable {
    @usableFromInline let storage: Storage

    /// - Parameter value: The initial value, evaluated in place: a struct of several references is
    ///   moved into the lock's storage, not copied (a copy costs a retain and, later, a release of each).
    @inlinable
    public init(_ value: @autoclosure () -> Value) {
        storage = Storage.make(value)
    }

    /// Runs `body` with exclusive access to the value.
    @inlinable
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try storage.withLock(body)
    }

    @usableFromInline
    final class Storage: ManagedBuffer<Value, pthread_mutex_t> {
        @inlinable
        static func make(_ value: () -> Value) -> Storage {
            let buffer = Storage.create(minimumCapacity: 1) { _ in value() }
            buffer.withUnsafeMutablePointerToElements { mutex in
                let result = pthread_mutex_init(mutex, nil)
                precondition(result == 0, "pthread_mutex_init failed: \(result)")
            }
            return unsafeDowncast(buffer, to: Storage.self)
        }

        @inlinable
        func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
            try withUnsafeMutablePointers { value, mutex in
                pthread_mutex_lock(mutex)
                defer { pthread_mutex_unlock(mutex) }
                return try body(&value.pointee)
            }
        }

        // ManagedBuffer destroys the header (the value) itself; the mutex is the one element.
        deinit {
            withUnsafeMutablePointerToElements { mutex in
                _ = pthread_mutex_destroy(mutex)
            }
        }
    }
}
