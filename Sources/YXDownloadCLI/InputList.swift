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
    /// What the second pass reads: the list itself, or the temporary file that kept a pipe's lines.
    private let fd: Int32
    /// What the first pass reads: the list, standard input, or the pipe it names.
    private let source: Int32
    /// Whether the first pass copies what it reads into `fd`.
    private let spooled: Bool
    /// Why a pipe named as the list could not be copied (no temporary file), if it could not.
    private var unkeptPipe: String?
    private var checked = false
    private let retainLimit: Int
    /// The first pass's entries, when there were at most `retainLimit` (then no second pass is needed).
    private(set) var checkedEntries: [DownloadListEntry]?
    /// A fingerprint of each entry the first pass found (8 bytes an entry: 1.6 MB for 200,000): a second
    /// pass that finds another entry, another number of them, or a line that no longer parses, read a
    /// list that changed meanwhile.
    private var checkedFingerprints: [Int] = []

    /// Opens a list; `-` is standard input. `retainingUpTo` is ``retainedEntriesLimit`` but for tests.
    init(path: String, retainingUpTo retainLimit: Int = InputList.retainedEntriesLimit) throws(OpenError) {
        self.retainLimit = retainLimit
        if path == "-" {
            displayName = "<stdin>"
            fd = try Self.spoolFile()
        } else {
            displayName = path
            let opened = open(path, O_RDONLY | O_CLOEXEC)
            guard opened >= 0 else { throw OpenError(description: "cannot read \(path): \(Self.reason(errno))") }
            var info = stat()
            let kind = fstat(opened, &info) == 0 ? info.st_mode & S_IFMT : S_IFREG
            if kind == S_IFDIR {
                close(opened)
                throw OpenError(description: "cannot read \(path): it is a directory")
            }
            if kind == S_IFREG {
                fd = opened
                source = opened
                spooled = false
            } else {
                // A pipe (`-i <(command)`, a FIFO, /dev/stdin) gives its lines once: kept for the second pass,
                // as standard input is.
                do {
                    fd = try Self.spoolFile()
                    spooled = true
                } catch {
                    // A short list needs no second read (its entries are kept): it goes on without a copy,
                    // and only a long one fails, after its check.
                    fd = opened
                    spooled = false
                    unkeptPipe = error.description
                }
                source = opened
            }
            return
        }
        source = STDIN_FILENO
        spooled = true
    }

    deinit {
        if source != fd && source != STDIN_FILENO { close(source) }
        close(fd)
    }

    /// An unlinked temporary file that keeps a list read from a pipe, for the second pass.
    private static func spoolFile() throws(OpenError) -> Int32 {
        // Where `TMPDIR` says, as `mktemp` does; `/tmp` without it.
        let directory = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((directory + "/yxdownload-list-XXXXXX").utf8CString)
        let spool = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard spool >= 0 else {
            let reason = Self.reason(errno)
            throw OpenError(description: "cannot create a temporary file for the list in \(directory) (TMPDIR): \(reason)")
        }
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        return spool
    }

    /// What the first pass found.
    struct Check {
        /// Valid entries (downloads).
        var entries = 0
        /// Every bad line, in order.
        var errors: [DownloadListError] = []
    }

    /// The first pass: parses every line and reports every error.
    ///
    /// - Parameter onHTTPS: Called once, at the first valid `https` entry (to start what TLS needs
    ///   while the check goes on).
    func check(onHTTPS: (() -> Void)? = nil) throws(OpenError) -> Check {
        var parser = DownloadListParser(fileName: displayName)
        var reader = LineReader(fd: source, copyTo: spooled ? fd : nil)
        var result = Check()
        var kept: [DownloadListEntry]? = []
        var fingerprints: [Int] = []
        var onHTTPS = onHTTPS
        func keep(_ entry: DownloadListEntry) {
            result.entries += 1
            if let call = onHTTPS, entry.usesTLS {
                onHTTPS = nil
                call()
            }
            fingerprints.append(entry.fingerprint)
            guard kept != nil else { return }
            if result.entries > retainLimit { kept = nil } else { kept?.append(entry) }
        }
        do {
            while let line = try reader.next() {
                if let entry = parser.consume(line, number: reader.lineNumber, isValidUTF8: reader.lastLineIsValidUTF8) { keep(entry) }
            }
        } catch {
            throw describe(error)
        }
        if let entry = parser.finish() { keep(entry) }
        if let unkeptPipe, kept == nil {
            throw OpenError(
                description: "cannot read \(displayName) twice: it is a pipe, and it could not be kept (\(unkeptPipe)); "
                    + "give the list as a file")
        }
        result.errors = parser.errors
        checkedEntries = kept
        checkedFingerprints = fingerprints
        checked = true
        return result
    }

    /// The second pass: the entries, one at a time. Call after ``check()``; needed only when
    /// ``checkedEntries`` is nil.
    func entries() -> Entries {
        precondition(checked, "check() the list before reading its entries")
        lseek(fd, 0, SEEK_SET)
        return Entries(
            reader: LineReader(fd: fd), parser: DownloadListParser(fileName: displayName), fingerprints: checkedFingerprints)
    }

    /// Entries of the second pass. A read error, a line that no longer parses, an entry other than the
    /// one the check found at its place, or more or fewer entries (the file changed after it was checked)
    /// ends the list early; ``failure`` says why. An entry the check did not see is never returned.
    struct Entries: IteratorProtocol {
        fileprivate var reader: LineReader
        fileprivate var parser: DownloadListParser
        /// The check's fingerprint of each entry, in order.
        private let fingerprints: [Int]
        private var produced = 0
        private var finished = false
        private(set) var failure: String?

        fileprivate init(reader: LineReader, parser: DownloadListParser, fingerprints: [Int]) {
            self.reader = reader
            self.parser = parser
            self.fingerprints = fingerprints
        }

        private var expected: Int { fingerprints.count }

        mutating func next() -> DownloadListEntry? {
            while !finished {
                let line: String?
                do {
                    line = try reader.next()
                } catch {
                    failure = "the input list could not be read again: \(InputList.describe(error, in: parser.fileName))"
                    finished = true
                    return nil
                }
                let entry: DownloadListEntry?
                if let line {
                    entry = parser.consume(line, number: reader.lineNumber, isValidUTF8: reader.lastLineIsValidUTF8)
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
                    guard entry.fingerprint == fingerprints[produced - 1] else {
                        return changed("\(parser.fileName):\(entry.line) is not the entry it had there")
                    }
                    return entry
                }
            }
            if failure == nil && produced != expected {
                failure = "the input list changed after it was checked (\(produced) entries, not \(expected))"
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
        Self.describe(error, in: displayName)
    }

    /// What a failure of the reader of list `name` means, in a sentence.
    fileprivate static func describe(_ error: LineReader.Failure, in displayName: String) -> OpenError {
        switch error {
        case .read(let code): OpenError(description: "cannot read \(displayName): \(Self.reason(code))")
        case .copy(let code): OpenError(description: "cannot keep \(displayName) in a temporary file: \(Self.reason(code))")
        case .lineTooLong(let line):
            OpenError(description: "\(displayName):\(line): line longer than \(LineReader.maximumLineLength) bytes")
        }
    }

    private static func reason(_ code: Int32) -> String { String(cString: strerror(code)) }
}

extension DownloadListEntry {
    /// Whether the URL's scheme is `https` (in any case), read from its first bytes (`URL.webScheme`):
    /// asked of every entry of a list without `https`.
    var usesTLS: Bool { url.webScheme == .https }

    /// A number that tells this entry from another (its line aside: a comment added above it does not
    /// change it), for the second pass of a list to recognise the entries the check found.
    fileprivate var fingerprint: Int {
        var hasher = Hasher()
        hasher.combine(url.absoluteString)
        hasher.combine(out)
        hasher.combine(dir)
        hasher.combine(checksum?.description)
        return hasher.finalize()
    }
}
