@_spi(YXQueueInternals) import YXQueue

/// The bottom of a terminal as a live area, redrawn in place (progress bars), with lines printed above
/// it that scroll away as on any terminal (finished files, failures, log lines).
///
/// Each redraw moves the cursor back up over the previous live area and rewrites it line by line,
/// clearing each row it writes on (a long line printed above wraps over several), in one write; lines to print above go first in the same write, so nothing
/// flickers and nothing is torn. The previous area is measured in rows of the current width (a line drawn
/// on a wider window wraps onto more rows once the window is narrowed). Only leftover rows below are
/// cleared with "erase below": clearing the screen from its top-left corner would make some terminals,
/// tmux among them, copy the whole screen into their scrollback at every frame. The cursor is hidden
/// while a live area is shown.
///
/// Lines meant for standard error (failures, `-v` logs) go through the screen when standard error is
/// the same terminal, so they land above the bars instead of through them; otherwise (`2> log`) they
/// go straight to standard error, which the bars cannot disturb.
///
/// Safe to use from any thread: the state sits behind one lock, held across each write so that frames
/// reach the terminal in the order they were made (the writes are ``Console``'s, never user code).
///
/// Shared by `yxdownload`'s ``TerminalReporter`` and the demo's progress board.
package final class TerminalScreen: Sendable {
    private let console: Console
    private let state = Locked(State())

    private struct State {
        /// The live lines last drawn, and their widths when drawn (the cursor is on the row below them).
        var live: [String] = []
        var drawnWidths: [Int] = []
        /// Lines to print above the live area at the next frame.
        var pending: [String] = []
        var cursorHidden = false
    }

    package init(console: Console) {
        self.console = console
    }

    /// The terminal's width now, in columns.
    package var columns: Int { console.size().columns }

    /// The terminal's height now, in rows.
    package var rows: Int { console.size().rows }

    /// Adds a line to print above the live area at the next frame (standard output).
    package func append(_ line: String) {
        state.withLock { $0.pending.append(line) }
    }

    /// Prints lines above the live area now; the live area is drawn again below them.
    ///
    /// - Parameter toStandardError: Lines for standard error: through the screen when standard error is
    ///   this terminal, otherwise written to standard error directly.
    package func print(_ lines: [String], toStandardError: Bool = false) {
        state.withLock { s in
            if toStandardError && !console.errorSharesTerminal {
                console.writeErr(lines.map { $0 + "\n" }.joined())
                return
            }
            s.pending += lines
            console.writeOut(frame(&s, live: s.live))
        }
    }

    /// Replaces the live area with `live` (lines no wider than ``columns`` - 1), after the lines waiting
    /// to be printed above it.
    package func draw(_ live: [String]) {
        state.withLock { s in console.writeOut(frame(&s, live: live)) }
    }

    /// Prints what waits and `keeping` (the last state of the live area, to leave on screen, if wanted),
    /// removes the live area for good and shows the cursor again.
    package func close(keeping final: [String] = []) {
        state.withLock { s in
            s.pending += final
            var text = frame(&s, live: [])
            if s.cursorHidden {
                text += "\u{1B}[?25h"
                s.cursorHidden = false
            }
            console.writeOut(text)
        }
    }

    /// Shows the cursor at once, whatever is drawn (the process is about to exit).
    package func abandon() {
        console.writeOut("\u{1B}[?25h")
    }

    /// A line written over what the screen shows there: its first row is cleared first and, when it
    /// wraps, the rest of its last row after it (the rows between are all written over). A line that
    /// ends exactly at the right margin gets no clearing after it: with the cursor parked there, some
    /// terminals would erase its last character.
    private static func row(_ line: String, columns: Int) -> String {
        let width = TextWidth.of(line)
        let tail = width > columns && width % columns != 0 ? "\u{1B}[K" : ""
        return "\u{1B}[2K" + line + tail + "\n"
    }

    /// The escape codes and text that print the pending lines, then `live` in place of the last live area.
    private func frame(_ s: inout State, live: [String]) -> String {
        let columns = max(1, console.size().columns)
        let rows = s.drawnWidths.reduce(0) { $0 + max(1, ($1 + columns - 1) / columns) }
        var text = rows == 0 ? "" : "\r\u{1B}[\(rows)A"
        if !live.isEmpty && !s.cursorHidden {
            text += "\u{1B}[?25l"
            s.cursorHidden = true
        }
        for line in s.pending + live { text += Self.row(line, columns: columns) }
        if rows > s.pending.count + live.count { text += "\u{1B}[J" }  // rows left over from the last area
        s.pending.removeAll()
        s.live = live
        s.drawnWidths = live.map(TextWidth.of)
        return text
    }
}
