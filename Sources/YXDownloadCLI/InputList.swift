import Foundation
import YXDownload

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The input list, checked whole before any request, then fed to the downloads.
///
/// A list of up to ``retainedEntriesLimit`` entries is parsed once: the first pass keeps its entries
/// for the downloads (about 370 bytes each, 1.5 MiB at most: peak RSS on a 4,096-line list), and what
/// was checked is exactly what is downloaded. A longer list is read twice, once to check it and once
/// to feed the downloads, and neither pass holds it in memory. Standard input (`-`) cannot be read
/// twice, so the first pass copies it to an unlinked temporary file that the second pass reads.
final class InputList {
    /// Lists with at most this many entries are not read a second time: on (b) of `scripts/bench`, a
    /// small file cost 192.5 k instructions with the second pass and 185.6 k without (callgrind).
    static let retainedEntriesLimit = 4_096

    /// Why the list cannot be read at all (exit status 2).
    struct OpenError: Error, CustomStringConvertible {
        var description: String
    }

    /// The name in messages: the path as given, or `<stdin>`.
    let displayName: String
    private let fd: Int32
    private let spooledFromStandardInput: Bool
    private var checked = false
    private let retainLimit: Int
    /// The first pass's entries, when there were at most `retainLimit` (then no second pass is needed).
    private(set) var checkedEntries: [DownloadListEntry]?
    /// How many entries the first pass found: a second pass that finds another number, or a line that no
    /// longer parses, read a list that changed meanwhile.
    private var checkedCount = 0

    /// Opens a list; `-` is standard input. `retainingUpTo` is ``retainedEntriesLimit`` but for tests.
    init(path: String, retainingUpTo retainLimit: Int = InputList.retainedEntriesLimit) throws(OpenError) {
        self.retainLimit = retainLimit
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
        var kept: [DownloadListEntry]? = []
        func keep(_ entry: DownloadListEntry) {
            result.entries += 1
            guard kept != nil else { return }
            if result.entries > retainLimit { kept = nil } else { kept?.append(entry) }
        }
        do {
            while let line = try reader.next() {
                if let entry = parser.consume(line, number: reader.lineNumber) { keep(entry) }
            }
        } catch {
            throw describe(error)
        }
        if let entry = parser.finish() { keep(entry) }
        result.errors = parser.errors
        checkedEntries = kept
        checkedCount = result.entries
        checked = true
        return result
    }

    /// The second pass: the entries, one at a time. Call after ``check()``; needed only when
    /// ``checkedEntries`` is nil.
    func entries() -> Entries {
        precondition(checked, "check() the list before reading its entries")
        lseek(fd, 0, SEEK_SET)
        return Entries(reader: LineReader(fd: fd), parser: DownloadListParser(fileName: displayName), expected: checkedCount)
    }

    /// Entries of the second pass. A read error, a line that no longer parses, or more or fewer entries
    /// than the check found (the file changed after it was checked) ends the list early; ``failure``
    /// says why. An entry the check did not see is never returned: the first one past the checked
    /// count ends the list instead.
    struct Entries: IteratorProtocol {
        fileprivate var reader: LineReader
        fileprivate var parser: DownloadListParser
        private let expected: Int
        private var produced = 0
        private var finished = false
        private(set) var failure: String?

        fileprivate init(reader: LineReader, parser: DownloadListParser, expected: Int) {
            self.reader = reader
            self.parser = parser
            self.expected = expected
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
                let entry: DownloadListEntry?
                if let line {
                    entry = parser.consume(line, number: reader.lineNumber)
                } else {
                    finished = true
                    entry = parser.finish()
                }
                if let error = parser.errors.first {
                    return changed("\(error)")
                }
                if let entry {
                    produced += 1
                    if produced > expected { return changed("more entries than the \(expected) it had") }
                    return entry
                }
            }
            if failure == nil && produced != expected {
                failure = "the input list changed after it was checked: \(produced) entries, not \(expected)"
            }
            return nil
        }

        /// Ends the pass: the list is not the one that was checked.
        private mutating func changed(_ how: String) -> DownloadListEntry? {
            failure = "the input list changed after it was checked (\(how))"
            finished = true
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
