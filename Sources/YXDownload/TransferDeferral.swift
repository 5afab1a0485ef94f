import Foundation

/// The result of a transfer step that must wait before it may go on (for a host's `Retry-After`, or a
/// back-off before a retry).
///
/// Waiting holds no transfer slot: the step ends with this result, and its job's manager adds a
/// ``DownloadWaitOperation`` of ``delay`` (on a queue without a useful limit) and, behind it, a step
/// that carries on the same work with the retries used so far.
struct TransferDeferral: Sendable, Equatable {
    /// How long to wait, in seconds.
    var delay: TimeInterval
    /// The retries used so far by this piece of work (per part, SPEC §4).
    var retriesUsed: Int
}
