import Foundation

/// Requests handed to a store one batch at a time (``JobStore/enqueue(batches:)``): a long list is
/// stored in one transaction while only one batch of it is in memory.
///
/// The store calls the closure, one call at a time, until it returns `nil`; whatever the closure
/// throws ends the enqueue, and nothing of it is stored. The batches are read once: after an enqueue,
/// the object gives nothing more.
///
/// ```swift
/// var lines = hugeList.makeIterator()
/// let batches = JobRequestBatches {
///     var batch: [JobRequest] = []
///     while batch.count < 1_000, let line = lines.next() { batch.append(try request(for: line)) }
///     return batch.isEmpty ? nil : batch
/// }
/// let counts = try await store.enqueue(batches: batches)
/// print("\(counts.enqueued) new jobs")
/// ```
public final class JobRequestBatches: @unchecked Sendable {
    // The closure and what it captures are touched only under the lock, one call at a time, so a
    // closure that keeps an iterator (not `Sendable`) may be called from the store's threads.
    private let lock = NSLock()
    private var produce: (() throws -> [JobRequest]?)?

    /// - Parameter next: The next batch of requests, or `nil` after the last one. It may return an
    ///   empty batch; it is called again.
    public init(_ next: @escaping () throws -> [JobRequest]?) {
        produce = next
    }

    /// A single batch of `requests`.
    public convenience init(_ requests: [JobRequest]) {
        var rest: [JobRequest]? = requests
        self.init {
            defer { rest = nil }
            return rest
        }
    }

    /// The next batch, or `nil` once the closure said there is no more (or threw). Called by stores.
    public func next() throws -> [JobRequest]? {
        lock.lock()
        defer { lock.unlock() }
        guard let produce else { return nil }
        do {
            if let batch = try produce() { return batch }
        } catch {
            self.produce = nil
            throw error
        }
        self.produce = nil
        return nil
    }
}
