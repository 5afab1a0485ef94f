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

    /// Concurrency limits (by key, as ``JobStore/setConcurrencyLimit(_:forKey:)`` sets them) that the
    /// store sets in the same transaction, before the first job: no job is claimable before its limit,
    /// and an enqueue that stores nothing sets none. (The default `enqueue(batches:)` of a store of
    /// someone else's sets them first, on their own.)
    public let concurrencyLimits: [String: Int]

    /// - Parameters:
    ///   - concurrencyLimits: Limits set with the jobs, in their transaction.
    ///   - next: The next batch of requests, or `nil` after the last one. It may return an empty batch;
    ///     it is called again.
    public init(concurrencyLimits: [String: Int] = [:], _ next: @escaping () throws -> [JobRequest]?) {
        self.concurrencyLimits = concurrencyLimits
        produce = next
    }

    /// A single batch of `requests`.
    public convenience init(_ requests: [JobRequest], concurrencyLimits: [String: Int] = [:]) {
        var rest: [JobRequest]? = requests
        self.init(concurrencyLimits: concurrencyLimits) {
            defer { rest = nil }
            return rest
        }
    }

    /// Throws ``JobStoreError/invalidArgument(_:)`` for an empty key or a negative limit in
    /// ``concurrencyLimits``. Called by stores before they store anything.
    public func validateLimits() throws {
        for (key, limit) in concurrencyLimits { try Self.validate(limit, forKey: key) }
    }

    /// What both stores require of a limit (`nil`: none) before they set it: a key that is not empty and
    /// a limit that is not negative; otherwise ``JobStoreError/invalidArgument(_:)``.
    package static func validate(_ limit: Int?, forKey key: String) throws {
        if key.isEmpty { throw JobStoreError.invalidArgument("a concurrency key is empty") }
        if let limit, limit < 0 { throw JobStoreError.invalidArgument("limit \(limit) for \(key) is negative") }
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
