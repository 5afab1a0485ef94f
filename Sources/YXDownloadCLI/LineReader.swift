#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a file descriptor line by line in 64 KiB chunks, so a list of any length needs memory for one
/// line at a time. Optionally copies every byte it reads to a second descriptor (how standard input is
/// kept for the second pass).
struct LineReader {
    /// A line longer than this is an error rather than a reason to hold the whole input in memory.
    static let maximumLineLength = 1 << 20

    enum Failure: Error, Equatable {
        case read(errno: Int32)
        case lineTooLong(line: Int)
        case copy(errno: Int32)
    }

    private let fd: Int32
    private let copyTo: Int32?
    private var buffer: [UInt8] = []
    private var head = 0
    private var atEnd = false
    /// Lines returned so far: the number of the last one.
    private(set) var lineNumber = 0
    /// Whether the last line returned was valid UTF-8 (an invalid byte came back as U+FFFD).
    private(set) var lastLineIsValidUTF8 = true

    init(fd: Int32, copyTo: Int32? = nil) {
        self.fd = fd
        self.copyTo = copyTo
        buffer.reserveCapacity(1 << 16)
    }

    /// The next line without its `\n`, or nil at the end.
    mutating func next() throws(Failure) -> String? {
        var searchFrom = head
        while true {
            if let newline = buffer[searchFrom...].firstIndex(of: UInt8(ascii: "\n")) {
                // Checked here too: a line that ends within the chunk just read may still be too long.
                if newline - head > Self.maximumLineLength { throw .lineTooLong(line: lineNumber + 1) }
                defer { head = newline + 1 }
                lineNumber += 1
                return decode(head..<newline)
            }
            if atEnd {
                guard head < buffer.count else { return nil }
                if buffer.count - head > Self.maximumLineLength { throw .lineTooLong(line: lineNumber + 1) }
                defer { head = buffer.count }
                lineNumber += 1
                return decode(head..<buffer.count)
            }
            if buffer.count - head > Self.maximumLineLength { throw .lineTooLong(line: lineNumber + 1) }
            if head > 0 {
                buffer.removeSubrange(0..<head)
                head = 0
            }
            searchFrom = buffer.count
            try fill()
        }
    }

    /// The bytes as text; an invalid UTF-8 sequence becomes U+FFFD, and ``lastLineIsValidUTF8`` says so.
    ///
    /// A line of ASCII alone, as a list's lines nearly always are, is made without the generic check:
    /// `String(validating:as:)` sets up its generic metadata on every call, about 1,200 instructions a
    /// line (callgrind, 2026-11-29).
    private mutating func decode(_ range: Range<Int>) -> String {
        lastLineIsValidUTF8 = true
        let ascii: String? = buffer.withUnsafeBufferPointer { all in
            let bytes = UnsafeBufferPointer(rebasing: all[range])
            return bytes.allSatisfy { $0 < 0x80 } ? String(decoding: bytes, as: UTF8.self) : nil
        }
        if let ascii { return ascii }
        if let text = String(validating: buffer[range], as: UTF8.self) { return text }
        lastLineIsValidUTF8 = false
        return String(decoding: buffer[range], as: UTF8.self)
    }

    private mutating func fill() throws(Failure) {
        let chunk = 1 << 16
        let old = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: chunk))
        var count = 0
        repeat {
            count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + old, chunk) }
        } while count < 0 && errno == EINTR
        guard count >= 0 else {
            let code = errno
            buffer.removeSubrange(old...)
            throw .read(errno: code)
        }
        buffer.removeSubrange((old + count)...)
        if count == 0 { atEnd = true }
        if let copyTo, count > 0 {
            let failed: Int32? = buffer.withUnsafeBytes { bytes in
                var offset = old
                while offset < old + count {
                    let written = write(copyTo, bytes.baseAddress! + offset, old + count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        return errno
                    }
                    offset += written
                }
                return nil
            }
            if let failed { throw .copy(errno: failed) }
        }
    }
}
