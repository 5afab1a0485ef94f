import Foundation
import YXQueue

/// Remembers, per host, the time before which no new request may go out (after a 429 or 503 with
/// `Retry-After`), shared by every download of the process.
final class HostGate: Sendable {
    static let shared = HostGate()

    private let notBefore = Locked<[String: Date]>([:])

    /// Seconds to wait before a request to `url` may be sent (0 = now).
    func wait(for url: URL) -> TimeInterval {
        guard let host = url.host?.lowercased() else { return 0 }
        return notBefore.withLock { hosts in
            guard let date = hosts[host] else { return 0 }
            let wait = date.timeIntervalSinceNow
            if wait <= 0 { hosts[host] = nil }
            return max(0, wait)
        }
    }

    /// Holds every request to `url`'s host for `seconds`.
    func hold(_ url: URL, for seconds: TimeInterval) {
        guard let host = url.host?.lowercased(), seconds > 0 else { return }
        let until = Date().addingTimeInterval(seconds)
        notBefore.withLock { hosts in
            hosts[host] = max(hosts[host] ?? .distantPast, until)
        }
    }
}
