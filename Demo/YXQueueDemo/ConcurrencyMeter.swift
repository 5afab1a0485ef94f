import Synchronization
import YXQueue

/// Counts how many operations of each type are executing at the same moment, and the most it saw, so
/// the demo can show that each `OperationModel`'s limit holds.
final class ConcurrencyMeter: Sendable {
    private let counts = Mutex<[String: (now: Int, peak: Int)]>([:])

    /// Runs `work` counted as one executing operation of `model`'s type.
    ///
    /// Call it around the work only, before the operation completes: the queue may start the next
    /// operation as soon as this one completes, and the two must not overlap in the count.
    func measure<T>(_ model: OperationModel, _ work: () throws -> T) rethrows -> T {
        counts.withLock { counts in
            var entry = counts[model.type] ?? (0, 0)
            entry.now += 1
            entry.peak = max(entry.peak, entry.now)
            counts[model.type] = entry
        }
        defer { counts.withLock { $0[model.type]?.now -= 1 } }
        return try work()
    }

    /// The most operations of `model`'s type seen executing at once.
    func peak(of model: OperationModel) -> Int {
        counts.withLock { $0[model.type]?.peak ?? 0 }
    }
}
