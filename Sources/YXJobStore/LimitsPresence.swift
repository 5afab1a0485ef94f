@_spi(YXQueueInternals) import YXQueue

/// Whether a store has concurrency limits at all, remembered for a second: what lets a claim take the
/// unlimited path (one statement, no read of the limits) on a store that sets none.
///
/// A stale "no limits" is safe: the unlimited path never takes a job of a limited key, so it only
/// delays those jobs by that second. Setting or removing a limit calls ``forget()``, so this process
/// sees its own change at once.
package final class LimitsPresence: Sendable {
    private struct Reading {
        var present = true
        var readAt: ContinuousClock.Instant?
    }

    private let reading = Locked(Reading())

    package init() {}

    /// The remembered answer when it is under a second old; otherwise `read()`'s, remembered.
    package func value(_ read: () async throws -> Bool) async throws -> Bool {
        let now = ContinuousClock.now
        let cached = reading.withLock { reading -> Bool? in
            guard let readAt = reading.readAt, now - readAt < .seconds(1) else { return nil }
            return reading.present
        }
        if let cached { return cached }
        let present = try await read()
        reading.withLock { $0 = Reading(present: present, readAt: now) }
        return present
    }

    /// The next ``value(_:)`` reads again.
    package func forget() {
        reading.withLock { $0.readAt = nil }
    }
}
