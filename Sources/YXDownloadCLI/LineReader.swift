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
                defer { head = newline + 1 }
                lineNumber += 1
                return String(decoding: buffer[head..<newline], as: UTF8.self)
            }
            if atEnd {
                guard head < buffer.count else { return nil }
                defer { head = buffer.count }
                lineNumber += 1
                return String(decoding: buffer[head...], as: UTF8.self)
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
