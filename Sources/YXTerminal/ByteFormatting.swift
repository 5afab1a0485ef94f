import Foundation

/// Human-readable sizes, rates and durations, in binary units like curl and aria2 (`4.0 MiB`).
package enum ByteFormatting {
    /// `0 B`, `999 B`, `1.0 KiB`, `12.3 MiB`, `1.50 GiB`.
    package static func bytes(_ value: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]
        var amount = Double(value)
        var unit = 0
        while amount >= 1024 && unit < units.count - 1 {
            amount /= 1024
            unit += 1
        }
        if unit == 0 { return "\(value) B" }
        return String(format: amount < 10 && unit >= 3 ? "%.2f" : "%.1f", amount) + " " + units[unit]
    }

    /// `12.3 MiB/s`.
    package static func rate(_ bytesPerSecond: Double) -> String {
        bytes(Int64(max(0, bytesPerSecond).rounded())) + "/s"
    }

    /// `0:07`, `12:04`, `1:02:03`; `--:--` when unknown. Rounded up (an ETA) or down (elapsed time).
    package static func duration(_ seconds: Double?, roundingUp: Bool = true) -> String {
        guard let seconds, seconds.isFinite, seconds >= 0, seconds < 100 * 3600 else { return "--:--" }
        let total = Int(seconds.rounded(roundingUp ? .up : .down))
        let (hours, minutes, secs) = (total / 3600, (total % 3600) / 60, total % 60)
        if hours > 0 { return String(format: "%d:%02d:%02d", hours, minutes, secs) }
        return String(format: "%d:%02d", minutes, secs)
    }

    /// `0.42 s`, `12.3 s`, `2 min 05 s`.
    package static func elapsed(_ seconds: Double) -> String {
        if seconds < 10 { return String(format: "%.2f s", seconds) }
        if seconds < 120 { return String(format: "%.1f s", seconds) }
        let total = Int(seconds.rounded())
        return String(format: "%d min %02d s", total / 60, total % 60)
    }
}
