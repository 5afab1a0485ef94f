/// What a worker asks ``JobStore/claim(_:)`` for.
public struct ClaimRequest: Sendable, Hashable {
    /// The worker's identity, written into each claimed job as its owner.
    public var owner: String
    /// The names the worker runs.
    public var names: JobNameFilter
    /// The most jobs to claim in this call.
    public var limit: Int
    /// How long the claimed jobs stay the worker's without a heartbeat.
    public var leaseDuration: Duration

    /// A claim of up to `limit` jobs of `names` for `owner`, each held for `leaseDuration`.
    public init(owner: String, names: JobNameFilter, limit: Int, leaseDuration: Duration) {
        self.owner = owner
        self.names = names
        self.limit = limit
        self.leaseDuration = leaseDuration
    }
}
