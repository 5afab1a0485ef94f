/// What ``JobStore/enqueue(batches:)`` did with the requests it was given, counted.
public struct EnqueueCounts: Sendable, Hashable {
    /// Stored under new identifiers.
    public var enqueued = 0
    /// Not stored: a live job held the unique key, and the request asked to join it.
    public var joined = 0
    /// Not stored: a live job held the unique key, and the request asked to be refused.
    public var refused = 0

    public init(enqueued: Int = 0, joined: Int = 0, refused: Int = 0) {
        self.enqueued = enqueued
        self.joined = joined
        self.refused = refused
    }

    /// Every request counted.
    public var total: Int { enqueued + joined + refused }

    /// Counts one result.
    public mutating func add(_ result: EnqueueResult) {
        switch result {
        case .enqueued: enqueued += 1
        case .joined: joined += 1
        case .refused: refused += 1
        }
    }

    /// Counts results.
    public mutating func add(_ results: some Sequence<EnqueueResult>) {
        for result in results { add(result) }
    }
}
