import Foundation
@_spi(YXQueueInternals) import YXQueue

/// Remembers, per origin (scheme, host and port), the time before which no new request may go out
/// (after a 429 or 503 with `Retry-After`).
///
/// Each ``TransferEngine`` has its own gate, shared by every download that runs on that engine, so two
/// engines (two programs' worth of downloads, or two tests) never hold each other up.
final class HostGate: Sendable {
    private let notBefore = Locked<[String: UInt64]>([:])

    /// Seconds to wait before a request to `url` may be sent (0 = now).
    func wait(for url: URL) -> TimeInterval {
        // Almost always nothing is held: the URL's origin (about 4,000 instructions) is not worked out.
        if notBefore.withLock({ $0.isEmpty }) { return 0 }
        guard let origin = Origin(url)?.description else { return 0 }
        let now = DispatchTime.now().uptimeNanoseconds
        return notBefore.withLock { origins in
            guard let until = origins[origin] else { return 0 }
            guard until > now else {
                origins[origin] = nil
                return 0
            }
            return Double(until - now) / 1e9
        }
    }

    /// Holds every request to `url`'s origin for `seconds`.
    func hold(_ url: URL, for seconds: TimeInterval) {
        guard let origin = Origin(url)?.description, seconds > 0, seconds.isFinite else { return }
        let until = DispatchTime.now().uptimeNanoseconds &+ seconds.clampedNanoseconds
        notBefore.withLock { origins in
            origins[origin] = max(origins[origin] ?? 0, until)
        }
    }
}
