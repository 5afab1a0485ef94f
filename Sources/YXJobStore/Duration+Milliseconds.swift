extension Duration {
    /// The duration in seconds, as a floating-point number.
    package var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    /// The duration as a store keeps it, in whole microseconds (rounded down), between 0 and 100 years:
    /// a delay that a caller gives (a ``JobRelease``, a retry policy's back-off) is added to the store's
    /// clock in 64 bits, and a larger one would overflow (a trap in Swift, an error in PostgreSQL).
    package var storedMicroseconds: Int64 {
        let limit: Int64 = 100 * 366 * 86_400 * 1_000_000
        // A negative duration under a second has 0 seconds and negative attoseconds.
        guard self > .zero else { return 0 }
        let parts = components
        guard parts.seconds < limit / 1_000_000 else { return limit }
        return min(limit, parts.seconds * 1_000_000 + parts.attoseconds / 1_000_000_000_000)
    }

    /// The duration in whole milliseconds (rounded down; negative durations give 0).
    package var milliseconds: Int64 {
        let parts = components
        return max(0, parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000)
    }
}
