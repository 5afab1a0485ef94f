import ArgumentParser
import Foundation
import YXDownload
import YXTerminal

/// A transfer rate given on the command line: bytes per second with an optional binary suffix,
/// as in curl's `--limit-rate` and aria2's `--max-overall-download-limit`.
///
/// `500K` is 500 KiB/s, `2M` is 2 MiB/s, `1.5G` is 1.5 GiB/s, `800` is 800 B/s. A trailing `B`, `/s`
/// or `iB` is accepted (`2MiB/s`, `500KB`).
package struct ByteRate: ExpressibleByArgument, Equatable, CustomStringConvertible {
    package var bytesPerSecond: Int

    package init(bytesPerSecond: Int) {
        self.bytesPerSecond = bytesPerSecond
    }

    package init?(argument: String) {
        var text = argument.trimmingWhitespace().lowercased()
        for suffix in ["/s", "b", "i"] where text.hasSuffix(suffix) {
            text.removeLast(suffix.count)
        }
        var multiplier = 1.0
        if let unit = text.last, let power = ["k": 1, "m": 2, "g": 3][unit] {
            multiplier = pow(1024, Double(power))
            text.removeLast()
        }
        guard let number = Double(text), number.isFinite, number > 0 else { return nil }
        let value = (number * multiplier).rounded()
        guard value >= 1, value < Double(Int.max / 2) else { return nil }
        bytesPerSecond = Int(value)
    }

    package var description: String { ByteFormatting.rate(Double(bytesPerSecond)) }

    package static var defaultCompletionKind: CompletionKind { .default }
}
