import Foundation

extension TimeInterval {
    /// The longest span the engine counts: a year (a timeout of more is no timeout).
    static let longestCountedSpan: TimeInterval = 86_400 * 365

    /// This many seconds in nanoseconds, between 0 and a year: a timeout a program passed as `1e20`,
    /// infinity or NaN (counted as no limit: a year) must not trap in the conversion to an integer (found
    /// by a review: `--timeout 1e20` crashed the command).
    var clampedNanoseconds: UInt64 {
        UInt64(clampedSeconds * 1e9)
    }

    /// This many seconds in milliseconds, between 0 and a year (see ``clampedNanoseconds``).
    var clampedMilliseconds: Int {
        Int(clampedSeconds * 1000)
    }

    private var clampedSeconds: TimeInterval {
        if isNaN { return Self.longestCountedSpan }
        return Swift.max(0, Swift.min(self, Self.longestCountedSpan))
    }
}
