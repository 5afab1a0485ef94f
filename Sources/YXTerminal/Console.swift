#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Where the command writes: standard output and standard error, unbuffered, whole strings at a time
/// (one `write` per string, so a redrawn frame reaches the terminal whole).
///
/// A closed pipe (`yxdownload list | head`) does not kill the process: SIGPIPE is ignored and the
/// write error is dropped, so downloads and the summary still complete.
///
/// Shared with the demo (`YXQueueDemo`), as is ``TerminalScreen``.
package struct Console: Sendable {
    package var writeOut: @Sendable (String) -> Void
    package var writeErr: @Sendable (String) -> Void
    /// Whether standard output is a terminal that understands cursor movement.
    package var isTerminal: Bool
    /// Whether standard error goes to the same terminal as standard output (then a line for standard
    /// error, written while bars are shown, must be written above them, by ``TerminalScreen``).
    package var errorSharesTerminal: Bool
    /// The terminal's size, asked each time (the window may be resized).
    package var size: @Sendable () -> (columns: Int, rows: Int)

    /// A console of your own (tests: a fake terminal).
    package init(
        writeOut: @escaping @Sendable (String) -> Void, writeErr: @escaping @Sendable (String) -> Void, isTerminal: Bool,
        errorSharesTerminal: Bool, size: @escaping @Sendable () -> (columns: Int, rows: Int)
    ) {
        self.writeOut = writeOut
        self.writeErr = writeErr
        self.isTerminal = isTerminal
        self.errorSharesTerminal = errorSharesTerminal
        self.size = size
    }

    /// The process's own standard output and error.
    package static let standard: Console = {
        signal(SIGPIPE, SIG_IGN)
        let term = variable("TERM") ?? ""
        let isTerminal = isatty(STDOUT_FILENO) == 1 && term != "dumb" && !term.isEmpty
        return Console(
            writeOut: { writeAll(STDOUT_FILENO, $0) },
            writeErr: { writeAll(STDERR_FILENO, $0) },
            isTerminal: isTerminal,
            errorSharesTerminal: isTerminal && sameTerminal(STDOUT_FILENO, STDERR_FILENO),
            size: { terminalSize(STDOUT_FILENO) })
    }()

    /// An environment variable. (`ProcessInfo.environment` copies the whole environment into a
    /// dictionary first: about 700,000 instructions at the start of every run.)
    private static func variable(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Whether two descriptors are the same terminal device.
    private static func sameTerminal(_ first: Int32, _ second: Int32) -> Bool {
        guard isatty(second) == 1 else { return false }
        var one = stat()
        var two = stat()
        return fstat(first, &one) == 0 && fstat(second, &two) == 0 && one.st_rdev == two.st_rdev
    }

    private static func writeAll(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }

    private static func terminalSize(_ fd: Int32) -> (columns: Int, rows: Int) {
        var size = winsize()
        #if canImport(Glibc)
        let request = UInt(TIOCGWINSZ)
        #else
        let request = TIOCGWINSZ
        #endif
        if ioctl(fd, request, &size) == 0, size.ws_col > 0 {
            return (Int(size.ws_col), Int(max(size.ws_row, 1)))
        }
        let columns = variable("COLUMNS").flatMap(Int.init) ?? 80
        return (max(columns, 20), 24)
    }
}
