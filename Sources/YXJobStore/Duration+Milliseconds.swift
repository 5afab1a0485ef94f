extension Duration {
    /// The duration in seconds, as a floating-point number.
    package var seconds: Double {
        let parts = components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }

    /// The duration in whole milliseconds (rounded down; negative durations give 0).
    package var milliseconds: Int64 {
        let parts = components
        return max(0, parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000)
    }
}
