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
        return decimal(amount, places: amount < 10 && unit >= 3 ? 2 : 1) + " " + units[unit]
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
        if hours > 0 { return "\(hours):\(twoDigits(minutes)):\(twoDigits(secs))" }
        return "\(minutes):\(twoDigits(secs))"
    }

    /// `0.42 s`, `12.3 s`, `2 min 05 s`.
    package static func elapsed(_ seconds: Double) -> String {
        if seconds < 10 { return decimal(seconds, places: 2) + " s" }
        if seconds < 120 { return decimal(seconds, places: 1) + " s" }
        let total = Int(seconds.rounded())
        return "\(total / 60) min \(twoDigits(total % 60)) s"
    }

    /// `value` with `places` decimals (0 to 3), rounded to the nearest (a tie to the even last digit): what
    /// `String(format: "%.2f", value)` prints, except for a value within a rounding error of a tie.
    ///
    /// `String(format:)` starts Foundation's formatting machinery on its first call, about a million
    /// instructions: a quarter of a millisecond added to every run of `yxdownload` that prints a size.
    ///
    /// ```swift
    /// ByteFormatting.decimal(1.5, places: 1)     // "1.5"
    /// ByteFormatting.decimal(0.4219, places: 3)  // "0.422"
    /// ```
    /// `value` as C's `printf("%.<places>f")` writes it, for the values ``decimal(_:places:)`` cannot
    /// round itself (infinite, NaN, or beyond 2^53). Through `vsnprintf`, not `String(format:)`, which is
    /// swift-corelibs-foundation's and would link all of it into the program.
    private static func printed(_ value: Double, places: Int) -> String {
        let format = "%.\(places)f"
        let size = withVaList([value]) { vsnprintf(nil, 0, format, $0) }
        guard size >= 0 else { return value.description }
        var buffer = [CChar](repeating: 0, count: Int(size) + 1)
        _ = buffer.withUnsafeMutableBufferPointer { out in
            withVaList([value]) { vsnprintf(out.baseAddress, out.count, format, $0) }
        }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    package static func decimal(_ value: Double, places: Int) -> String {
        let places = min(3, max(0, places))
        let scale: UInt64 = [1, 10, 100, 1000][places]
        let scaled = (value.magnitude * Double(scale)).rounded(.toNearestOrEven)
        // Beyond 2^53 a Double holds no fraction, and beyond UInt64 it no longer converts.
        guard value.isFinite, scaled < 9.0e15 else { return printed(value, places: places) }
        let units = UInt64(scaled)
        var text = value.sign == .minus ? "-" : ""
        text += String(units / scale)
        if places > 0 {
            let fraction = String(units % scale)
            text += "." + String(repeating: "0", count: places - fraction.count) + fraction
        }
        return text
    }

    /// `7` as `07`, `42` as `42`: minutes and seconds of a clock.
    private static func twoDigits(_ value: Int) -> String {
        value < 10 && value >= 0 ? "0\(value)" : String(value)
    }
}
