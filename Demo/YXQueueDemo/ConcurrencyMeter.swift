import Synchronization
import YXQueue

/// Counts how many steps of each queue are executing at the same moment, and the most it saw, so the
/// demo can show that each queue's limit holds.
final class ConcurrencyMeter: Sendable {
    private let counts = Mutex<[String: (now: Int, peak: Int)]>([:])

    /// Runs `work` counted as one executing step of `queue`.
    ///
    /// Call it around the work only, before the operation completes: the queue may start the next
    /// operation as soon as this one completes, and the two must not overlap in the count.
    func measure<T>(_ queue: String, _ work: () throws -> T) rethrows -> T {
        counts.withLock { counts in
            var entry = counts[queue] ?? (0, 0)
            entry.now += 1
            entry.peak = max(entry.peak, entry.now)
            counts[queue] = entry
        }
        defer { counts.withLock { $0[queue]?.now -= 1 } }
        return try work()
    }

    /// The most steps of `queue` seen executing at once.
    func peak(of queue: String) -> Int {
        counts.withLock { $0[queue]?.peak ?? 0 }
    }
}
