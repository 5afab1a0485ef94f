#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A fixed table of mutexes, shared by many small objects: each object finds its lock by its address.
///
/// Operations use it instead of a lock of their own: one allocation per operation fewer (a lock is an
/// object of its own, see ``Locked``), made on the thread that builds the operation and freed on the
/// thread that ends it, where the allocator takes a lock shared by both. Two operations may share a
/// mutex, so a thread holding one never takes another from the table: the critical sections are leaves
/// (they call nothing that locks).
enum StripedLocks {
    /// A power of two.
    static let count = 64
    /// One cache line per mutex, so that two threads on two stripes do not share a line.
    private static let stride = 64

    private struct Table: @unchecked Sendable {
        let base: UnsafeMutableRawPointer
    }

    private static let table: Table = {
        precondition(MemoryLayout<pthread_mutex_t>.size <= stride)
        let base = UnsafeMutableRawPointer.allocate(byteCount: count * stride, alignment: stride)
        for index in 0..<count {
            let mutex = (base + index * stride).bindMemory(to: pthread_mutex_t.self, capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            let result = pthread_mutex_init(mutex, nil)
            precondition(result == 0, "pthread_mutex_init failed: \(result)")
        }
        return Table(base: base)
    }()

    /// Runs `body` holding the mutex of `object`.
    ///
    /// - Important: `body` must not take a lock of this table (another object's may be the same).
    @inline(__always)
    static func withLock<Result>(for object: AnyObject, _ body: () throws -> Result) rethrows -> Result {
        // Fibonacci hashing of the address: objects are 16-byte aligned, and neighbours should spread.
        let address = UInt(bitPattern: ObjectIdentifier(object))
        let index = Int(truncatingIfNeeded: (address &* 0x9E37_79B9_7F4A_7C15) >> 58)
        let mutex = (table.base + index * stride).assumingMemoryBound(to: pthread_mutex_t.self)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
