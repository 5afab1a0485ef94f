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
    private let checkJoin: ((JoinedRequest) throws -> Void)?

    /// Concurrency limits (by key, as ``JobStore/setConcurrencyLimit(_:forKey:)`` sets them) that the
    /// store sets in the same transaction, before the first job: no job is claimable before its limit,
    /// and an enqueue that stores nothing sets none. (The default `enqueue(batches:)` of a store of
    /// someone else's sets them first, on their own.)
    public let concurrencyLimits: [String: Int]

    /// - Parameters:
    ///   - concurrencyLimits: Limits set with the jobs, in their transaction.
    ///   - checkingJoins: Called for each request that joins a live job (``JobOptions/onDuplicate`` is
    ///     `.join` and a live job holds its unique key), with that job's identifier and parameters: a
    ///     check that the job joined is the one the caller meant. What it throws ends the enqueue, and
    ///     nothing of it is stored. It is called between batches, one call at a time, like `next`: the
    ///     joins of a batch are checked before the next batch is asked for, so `next` may throw once the
    ///     list ends, after every join was seen. That holds for `SQLiteJobStore` and `PostgresJobStore`.
    ///     A store that does not implement ``JobStore/enqueue(batches:)`` itself gathers every batch
    ///     first and checks the joins after storing: there, what the check throws is thrown but does not
    ///     undo the enqueue, and a `next` that throws at the end of the list has not seen the joins yet.
    ///   - next: The next batch of requests, or `nil` after the last one. It may return an empty batch;
    ///     it is called again.
    ///
    /// ```swift
    /// let batches = JobRequestBatches(checkingJoins: { joined in
    ///     guard joined.existingPayload == joined.request.payload else { throw Conflict(joined.existing) }
    /// }) { lines.next().map { [try request(for: $0)] } }
    /// ```
    public init(
        concurrencyLimits: [String: Int] = [:],
        checkingJoins: ((JoinedRequest) throws -> Void)? = nil,
        _ next: @escaping () throws -> [JobRequest]?
    ) {
        self.concurrencyLimits = concurrencyLimits
        checkJoin = checkingJoins
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

    /// Whether joins are to be checked (``check(_:)``): then a store reads the parameters of the live
    /// jobs that requests joined.
    public var checksJoins: Bool { checkJoin != nil }

    /// Checks the joins of one batch, in order (see ``init(concurrencyLimits:checkingJoins:_:)``).
    /// Called by stores, inside the enqueue's transaction, before the next batch is asked for.
    public func check(_ joins: [JoinedRequest]) throws {
        guard let checkJoin, !joins.isEmpty else { return }
        lock.lock()
        defer { lock.unlock() }
        for joined in joins { try checkJoin(joined) }
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
