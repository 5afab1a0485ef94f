import Synchronization

/// The first queues a ``Dispatcher`` made, found by name without the dispatcher's lock: every ready
/// operation looks its queue up, on whichever thread submits it, and a program has a handful of queues.
///
/// Each slot is written once, under the dispatcher's lock, before the count publishes it (a releasing
/// store); a reader loads the count (acquiring) and reads only the slots it covers. Queues past the
/// first ``capacity`` are found in the dispatcher's table, under its lock.
final class QueueDirectory: @unchecked Sendable {
    static let capacity = 8
    private let slots = UnsafeMutablePointer<WorkQueue>.allocate(capacity: QueueDirectory.capacity)
    private let count = Atomic<Int>(0)

    deinit {
        slots.deinitialize(count: count.load(ordering: .acquiring))
        slots.deallocate()
    }

    /// The published queue named `name`, if any. Safe from any thread.
    func queue(named name: String) -> WorkQueue? {
        let published = count.load(ordering: .acquiring)
        for index in 0..<published where slots[index].name == name { return slots[index] }
        return nil
    }

    /// Publishes `queue`, if there is room. Called under the dispatcher's lock only, so that two calls
    /// never write the same slot.
    func add(_ queue: WorkQueue) {
        let index = count.load(ordering: .relaxed)
        guard index < QueueDirectory.capacity else { return }
        (slots + index).initialize(to: queue)
        count.store(index + 1, ordering: .releasing)
    }
}
