#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

#if canImport(Glibc)
private let posixWrite = Glibc.write
#else
private let posixWrite = Darwin.write
#endif

/// Where the demo writes: standard output and standard error, each string in one `write(2)`.
///
/// One write per string matters for the live board: a frame (cursor movement plus every row) must reach
/// the terminal whole, or a half-drawn frame would flicker. `isInteractive` decides between the live
/// board and plain lines.
struct Terminal: Sendable {
    /// Whether standard output is a terminal that understands cursor movement (not a pipe, a file, or
    /// `TERM=dumb`).
    let isInteractive: Bool

    /// The process's standard output and error.
    static func standard() -> Terminal {
        // `yxqueuedemo | head` must not kill the demo half-way with SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        let term = ProcessInfo.processInfo.environment["TERM"] ?? ""
        return Terminal(isInteractive: isatty(STDOUT_FILENO) == 1 && !term.isEmpty && term != "dumb")
    }

    /// The width of the terminal in columns, asked each time (the window may be resized); 80 when
    /// standard output is not a terminal.
    var columns: Int {
        var size = winsize()
        #if canImport(Glibc)
        let request = UInt(TIOCGWINSZ)
        #else
        let request = TIOCGWINSZ
        #endif
        if ioctl(STDOUT_FILENO, request, &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 80
    }

    /// Writes `text` to standard output as it is.
    func write(_ text: String) { Self.write(text, to: STDOUT_FILENO) }

    /// Writes one line to standard output.
    func line(_ text: String = "") { write(text + "\n") }

    /// Writes one line to standard error.
    func errorLine(_ text: String) { Self.write(text + "\n", to: STDERR_FILENO) }

    private static func write(_ text: String, to descriptor: Int32) {
        var text = text
        text.withUTF8 { bytes in
            guard let base = bytes.baseAddress else { return }
            var done = 0
            while done < bytes.count {
                let count = posixWrite(descriptor, base + done, bytes.count - done)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { return }  // a closed pipe: drop the rest, keep running
                done += count
            }
        }
    }
}
