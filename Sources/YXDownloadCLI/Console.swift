#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Where the command writes: standard output and standard error, unbuffered, whole strings at a time.
///
/// A closed pipe (`yxdownload list | head`) does not kill the process: SIGPIPE is ignored and the
/// write error is dropped, so downloads and the summary still complete.
struct Console: Sendable {
    var writeOut: @Sendable (String) -> Void
    var writeErr: @Sendable (String) -> Void
    /// Whether standard output is a terminal that understands cursor movement.
    var isTerminal: Bool
    /// The terminal's size, asked each time (the window may be resized).
    var size: @Sendable () -> (columns: Int, rows: Int)

    /// The process's own standard output and error.
    static let standard: Console = {
        signal(SIGPIPE, SIG_IGN)
        let term = ProcessInfo.processInfo.environment["TERM"] ?? ""
        return Console(
            writeOut: { writeAll(STDOUT_FILENO, $0) },
            writeErr: { writeAll(STDERR_FILENO, $0) },
            isTerminal: isatty(STDOUT_FILENO) == 1 && term != "dumb" && !term.isEmpty,
            size: { terminalSize(STDOUT_FILENO) })
    }()

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
        let columns = ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init) ?? 80
        return (max(columns, 20), 24)
    }
}
