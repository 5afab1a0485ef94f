import Foundation

/// Sizes, rates and durations as people read them: binary units (`4.0 MiB`), seconds with two
/// decimals, and `m:ss` clocks.
enum ByteText {
    /// `512 B`, `1.5 KiB`, `36.5 MiB`, `1.20 GiB` (from 1000 of a unit on, the next unit: `1.0 MiB`).
    static func size(_ bytes: Int64) -> String {
        if bytes < 1024 { return "\(bytes) B" }
        let units = ["KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1000 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(format: unit >= 2 && value < 10 ? "%.2f %@" : "%.1f %@", value, units[unit])
    }

    /// `3.0 MiB/s`.
    static func rate(_ bytesPerSecond: Double) -> String {
        guard bytesPerSecond.isFinite, bytesPerSecond > 0 else { return "0 B/s" }
        return size(Int64(bytesPerSecond.rounded())) + "/s"
    }

    /// `0.42 s`, `12.30 s`.
    static func seconds(_ value: Double) -> String {
        String(format: "%.2f s", value)
    }

    /// `0:07`, `1:05`: elapsed time, rounded down.
    static func clock(_ value: Double) -> String {
        let whole = max(0, Int(value))
        return String(format: "%d:%02d", whole / 60, whole % 60)
    }

    /// Seconds between two instants of the continuous clock.
    static func seconds(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant = .now) -> Double {
        let duration = start.duration(to: end)
        return Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
