import Foundation
@_spi(YXQueueInternals) import YXQueue

/// Remembers, per origin (scheme, host and port), that a download could not connect to it through all
/// of its retries, for as long as those retries took: a later download whose connection fails the same
/// way in that time fails at once, without retries of its own.
///
/// Without it, a list of 2,000 files on a server that is down (or a mistyped port) took about an hour
/// to fail with `-j 16`: every download waited through its own back-off (1 + 2 + 4 + 8 + 16 s by
/// default) before the next one could start. Now the first downloads wait it out, and the rest fail
/// as soon as their connection is refused.
///
/// Only downloads whose connection fails are affected: once the server is back, a later download
/// connects and never looks here. So nothing needs to clear a mark when the server comes back; it lapses
/// after its time, and a download refused after that waits through its retries again.
///
/// Each ``TransferEngine`` has its own, shared by every download that runs on that engine.
final class UnreachableOrigins: Sendable {
    private let marks = Locked<[String: UInt64]>([:])

    /// Marks the origin of `url` as unreachable for the time `policy`'s retries take (the sum of
    /// their back-offs without jitter), from now.
    func markUnreachable(_ url: URL, retriedUnder policy: RetryPolicy) {
        let seconds = Self.backOffTotal(policy)
        guard seconds > 0, let origin = Origin(url)?.description else { return }
        let until = DispatchTime.now().uptimeNanoseconds &+ seconds.clampedNanoseconds
        marks.withLock { origins in
            origins[origin] = max(origins[origin] ?? 0, until)
        }
    }

    /// Whether another download failed to connect to `url`'s origin through all of its retries a short
    /// time ago (see ``markUnreachable(_:retriedUnder:)``).
    func isUnreachable(_ url: URL) -> Bool {
        if marks.withLock({ $0.isEmpty }) { return false }
        guard let origin = Origin(url)?.description else { return false }
        let now = DispatchTime.now().uptimeNanoseconds
        return marks.withLock { origins in
            guard let until = origins[origin] else { return false }
            if until > now { return true }
            origins[origin] = nil
            return false
        }
    }

    /// The time all of `policy`'s retries wait, without jitter, in seconds.
    static func backOffTotal(_ policy: RetryPolicy) -> TimeInterval {
        guard policy.retries > 0 else { return 0 }
        var total: TimeInterval = 0
        var wait = policy.initialDelay
        for _ in 0..<min(policy.retries, 64) {
            total += min(policy.maxDelay, wait)
            wait *= 2
        }
        return total
    }
}
