import Foundation
import YXDownload

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The input list, read twice: once to check every line before any request, once to feed downloads.
///
/// Neither pass holds the list in memory. Standard input (`-`) cannot be read twice, so the first pass
/// copies it to an unlinked temporary file that the second pass reads.
final class InputList {
    /// Why the list cannot be read at all (exit status 2).
    struct OpenError: Error, CustomStringConvertible {
        var description: String
    }

    /// The name in messages: the path as given, or `<stdin>`.
    let displayName: String
    private let fd: Int32
    private let spooledFromStandardInput: Bool
    private var checked = false

    /// Opens a list; `-` is standard input.
    init(path: String) throws(OpenError) {
        if path == "-" {
            displayName = "<stdin>"
            var template = Array((NSTemporaryDirectory() + "/yxdownload-stdin-XXXXXX").utf8CString)
            let spool = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
            guard spool >= 0 else {
                throw OpenError(description: "cannot create a temporary file for standard input: \(Self.reason(errno))")
            }
            template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
            fd = spool
            spooledFromStandardInput = true
        } else {
            displayName = path
            let opened = open(path, O_RDONLY | O_CLOEXEC)
            guard opened >= 0 else { throw OpenError(description: "cannot read \(path): \(Self.reason(errno))") }
            var info = stat()
            if fstat(opened, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
                close(opened)
                throw OpenError(description: "cannot read \(path): it is a directory")
            }
            fd = opened
            spooledFromStandardInput = false
        }
    }

    deinit { close(fd) }

    /// What the first pass found.
    struct Check {
        /// Valid entries (downloads).
        var entries = 0
        /// Every bad line, in order.
        var errors: [DownloadListError] = []
    }

    /// The first pass: parses every line and reports every error.
    func check() throws(OpenError) -> Check {
        var parser = DownloadListParser(fileName: displayName)
        var reader = LineReader(fd: spooledFromStandardInput ? STDIN_FILENO : fd,
                                copyTo: spooledFromStandardInput ? fd : nil)
        var result = Check()
        do {
            while let line = try reader.next() {
                if parser.consume(line, number: reader.lineNumber) != nil { result.entries += 1 }
            }
        } catch {
            throw describe(error)
        }
        if parser.finish() != nil { result.entries += 1 }
        result.errors = parser.errors
        checked = true
        return result
    }

    /// The second pass: the entries, one at a time. Call after ``check()``.
    func entries() -> Entries {
        precondition(checked, "check() the list before reading its entries")
        lseek(fd, 0, SEEK_SET)
        return Entries(reader: LineReader(fd: fd), parser: DownloadListParser(fileName: displayName))
    }

    /// Entries of the second pass. A read error here (the file changed under us) ends the list early;
    /// ``failure`` says why.
    struct Entries: IteratorProtocol {
        fileprivate var reader: LineReader
        fileprivate var parser: DownloadListParser
        private var finished = false
        private(set) var failure: String?

        fileprivate init(reader: LineReader, parser: DownloadListParser) {
            self.reader = reader
            self.parser = parser
        }

        mutating func next() -> DownloadListEntry? {
            while !finished {
                let line: String?
                do {
                    line = try reader.next()
                } catch {
                    failure = "the input list could not be read again: \(error)"
                    finished = true
                    return nil
                }
                guard let line else {
                    finished = true
                    return parser.finish()
                }
                if let entry = parser.consume(line, number: reader.lineNumber) { return entry }
            }
            return nil
        }
    }

    private func describe(_ error: LineReader.Failure) -> OpenError {
        switch error {
        case .read(let code): OpenError(description: "cannot read \(displayName): \(Self.reason(code))")
        case .copy(let code): OpenError(description: "cannot keep standard input in a temporary file: \(Self.reason(code))")
        case .lineTooLong(let line):
            OpenError(description: "\(displayName):\(line): line longer than \(LineReader.maximumLineLength) bytes")
        }
    }

    private static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }
}
