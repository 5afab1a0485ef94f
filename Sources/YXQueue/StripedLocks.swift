#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A fixed table of mutexes, shared by many small objects: each object finds its lock by its address.
///
/// Objects made by the million use it instead of a lock of their own: a mutex is 40 bytes, and an
/// object that carries one grows past the sizes that the allocator frees without a lock (at most 120
/// bytes with glibc). Such an object is made on the thread that adds a job and freed on a thread that
/// ends it; a larger one takes the allocator's arena lock there, which the adding thread's next
/// `malloc` needs.
///
/// Two objects may share a mutex, so a thread holding a mutex of a table never takes another mutex of
/// the same table: the critical sections of a table are leaves with respect to it. There are two
/// tables, so that a job's state (``jobs``) may be locked around its operations' (``operations``), never
/// the other way round.
struct StripedLocks: @unchecked Sendable {
    /// The table of the operations' states (``QueueOperation``): leaves, they take no other lock.
    static let operations = StripedLocks()
    /// The table of the jobs' states (``Job``, shared by its ``JobManager``). A job's critical section may
    /// lock one of its operations, never another job, nor anything that locks a job.
    static let jobs = StripedLocks()

    /// A power of two.
    private static let count = 64
    /// One cache line per mutex, so that two threads on two stripes do not share a line.
    private static let stride = 64

    private let base: UnsafeMutableRawPointer

    private init() {
        precondition(MemoryLayout<pthread_mutex_t>.size <= Self.stride)
        base = UnsafeMutableRawPointer.allocate(byteCount: Self.count * Self.stride, alignment: Self.stride)
        for index in 0..<Self.count {
            let mutex = (base + index * Self.stride).bindMemory(to: pthread_mutex_t.self, capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            let result = pthread_mutex_init(mutex, nil)
            precondition(result == 0, "pthread_mutex_init failed: \(result)")
        }
    }

    /// Runs `body` holding the mutex of `object`.
    ///
    /// - Important: `body` must not take a lock of this table (another object's may be the same).
    @inline(__always)
    func withLock<Result>(for object: AnyObject, _ body: () throws -> Result) rethrows -> Result {
        // Fibonacci hashing of the address: objects are 16-byte aligned, and neighbours should spread.
        let address = UInt(bitPattern: ObjectIdentifier(object))
        let index = Int(truncatingIfNeeded: (address &* 0x9E37_79B9_7F4A_7C15) >> 58)
        let mutex = (base + index * Self.stride).assumingMemoryBound(to: pthread_mutex_t.self)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
