import Foundation
import YXTerminal

/// The demo writes through the command line's ``Console`` (one `write` per string; a closed pipe does
/// not stop it), a line at a time.
extension Console {
    /// Writes one line to standard output.
    func line(_ text: String = "") { writeOut(text + "\n") }

    /// Writes one line to standard error.
    func errorLine(_ text: String) { writeErr(text + "\n") }
}

/// Seconds between two instants of the continuous clock.
func seconds(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant = .now) -> Double {
    let duration = start.duration(to: end)
    return Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}
