import Foundation
import YXDownload

/// One download of an input list (SPEC §4): a URL and the option lines under it.
struct DownloadListEntry: Sendable, Equatable {
    /// The URL, as written.
    var url: URL
    /// The line the URL is on (1-based).
    var line: Int
    /// `out=`: the file name, already sanitized.
    var out: String?
    /// `dir=`: a directory relative to the output directory, as safe path components.
    var dir: [String]
    /// `checksum=`: the expected digest.
    var checksum: Checksum?
}

/// A bad line of an input list, reported as `FILE:LINE: reason`.
struct DownloadListError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The list's name as given to the parser (``DownloadListParser/fileName``).
    var file: String
    /// The line number, from 1.
    var line: Int
    /// What is wrong with the line.
    var reason: String

    var description: String { "\(file):\(line): \(reason)" }
}

/// Reads input lists in aria2's style, one line at a time, so a list of any length needs memory only
/// for the entry being read.
///
/// ```
/// # comment
/// https://example.com/a.iso
///   out=debian.iso
///   dir=images
///   checksum=sha-256=9f86d0…
/// https://example.com/b.txt
/// ```
///
/// Blank lines and lines starting with `#` are ignored. Indented lines are options of the URL above them:
/// `out=NAME`, `dir=DIR` (relative to the output directory) and `checksum=ALGORITHM=HEX` (md5, sha-1,
/// sha-256, sha-512). An `out=` or `dir=` that would leave the output directory (`..`, an absolute path)
/// is an error, as are unknown options, URLs that are not http or https, and options with no URL.
///
/// ```swift
/// var parser = DownloadListParser(fileName: "urls.txt")
/// for (number, line) in lines.enumerated() {
///     if let entry = parser.consume(line, number: number + 1) { handle(entry) }
/// }
/// if let last = parser.finish() { handle(last) }
/// print(parser.errors)       // [urls.txt:7: unknown option "foo"]
/// ```
struct DownloadListParser: Sendable {
    /// The name used in error messages.
    let fileName: String
    /// Every error so far, in line order.
    private(set) var errors: [DownloadListError] = []
    private var pending: DownloadListEntry?
    private var pendingIsValid = true

    /// Creates a parser; `fileName` is used only in error messages.
    init(fileName: String) {
        self.fileName = fileName
    }

    /// Reads one line; returns the entry the line completed, if any (an entry is complete when the next
    /// URL line, or the end, arrives). Entries with an error are never returned.
    ///
    /// - Parameter isValidUTF8: false when the line held bytes that are not UTF-8 (the reader gave them
    ///   as U+FFFD): an error unless the line is a comment, since the URL or name read would not be the
    ///   one written.
    mutating func consume(_ line: some StringProtocol, number: Int, isValidUTF8: Bool = true) -> DownloadListEntry? {
        var text = Substring(line)
        // A byte order mark, which some editors put at the start of a UTF-8 file, is not part of the line.
        if number == 1, text.unicodeScalars.first == "\u{FEFF}" { text = Substring(text.unicodeScalars.dropFirst()) }
        let trimmed = String(text.trimmingASCIIWhitespace())
        if trimmed.isEmpty || trimmed.hasPrefix("#") { return nil }
        let indented = text.first == " " || text.first == "\t"
        if !isValidUTF8 {
            // Found by a review: a Latin-1 byte in a URL became U+FFFD, and another URL was requested.
            // A URL line ends the entry above it; an option line spoils its entry.
            let completed = indented ? nil : takePending()
            fail(number, "not UTF-8 text (save the list as UTF-8, or write the byte %-escaped in a URL)")
            pendingIsValid = false
            return completed
        }
        if indented {
            addOption(trimmed, number: number)
            return nil
        }
        let completed = takePending()
        startEntry(trimmed, number: number)
        return completed
    }

    /// Ends the list; returns its last entry, if it is complete and valid.
    mutating func finish() -> DownloadListEntry? {
        takePending()
    }

    private mutating func takePending() -> DownloadListEntry? {
        let entry = pending.take()  // moved out, not copied and then destroyed
        return pendingIsValid ? entry : nil
    }

    private mutating func fail(_ number: Int, _ reason: String) {
        errors.append(DownloadListError(file: fileName, line: number, reason: PrintableText.escaped(reason)))
    }

    private mutating func startEntry(_ text: String, number: Int) {
        pendingIsValid = false
        switch Self.downloadURL(text) {
        case .failure(let reason):
            fail(number, reason.description)
            pending = nil
        case .success(let url):
            pending = DownloadListEntry(url: url, line: number, out: nil, dir: [], checksum: nil)
            pendingIsValid = true
        }
    }

    /// The longest URL accepted, in bytes.
    static let maximumURLLength = 65_536

    /// Why a text is not a URL that can be downloaded.
    struct URLProblem: Error, CustomStringConvertible {
        var description: String
    }

    /// The URL a text names, if it is an http or https URL with a host (a list line or a command-line
    /// argument); otherwise why not, without credentials.
    static func downloadURL(_ text: String) -> Result<URL, URLProblem> {
        // Servers refuse request lines of more than 8 to 64 KiB, and curl fails one of a megabyte as if it
        // had run out of memory (found by a review): a longer URL is an input error, said as such.
        guard text.utf8.count <= maximumURLLength else {
            return .failure(URLProblem(description: "URL longer than \(maximumURLLength) bytes (\(text.utf8.count))"))
        }
        // `URL(string:)` would quietly escape these: a tab before a second URL (aria2's mirrors), a
        // comment after a space, a NUL would all become part of the path.
        if containsBlankOrControl(text) {
            let hint = text.firstRange(of: "://") != nil ? " (a URL holds no spaces or control characters; write a space as %20)" : ""
            return .failure(URLProblem(description: "not a URL: \(showingWideBlanks(redacted(text)))\(hint)"))
        }
        // `webScheme` first: it answers http and https from the string's bytes, where `URL.scheme` costs
        // about 450 instructions an entry; any other scheme is read in full, for the message.
        let parsed = URL(string: text)
        let isWeb = parsed?.webScheme != nil
        guard let url = parsed, isWeb || url.scheme != nil else {
            return .failure(URLProblem(description: "not a URL: \(redacted(text))"))
        }
        // As sent: a character beyond ASCII goes as several %-escapes.
        let sent = url.absoluteString.utf8.count
        guard sent <= maximumURLLength else {
            return .failure(URLProblem(description: "URL longer than \(maximumURLLength) bytes once %-encoded (\(sent))"))
        }
        // A port `URL` kept out of range, or one too large for it to keep (it drops it then).
        if url.port.map({ !(1...65535).contains($0) }) ?? Self.writesAPort(text) {
            let port = url.port.map { "port \($0)" } ?? "the port"
            return .failure(URLProblem(description: "\(port) is out of range (1 to 65535): \(redacted(text))"))
        }
        guard isWeb else {
            let scheme = url.scheme?.lowercased() ?? ""
            return .failure(URLProblem(description: "unsupported scheme \"\(scheme)\" (only http and https)"))
        }
        guard let host = url.host, !host.isEmpty else {
            // No host, so no user either for `URL`: what looks like credentials is in the path.
            return .failure(URLProblem(description: "URL without a host: \(redacted(text))"))
        }
        return .success(url)
    }

    private mutating func addOption(_ text: String, number: Int) {
        guard pending != nil || !pendingIsValid else {
            fail(number, "option line without a URL above it")
            return
        }
        guard let equals = text.firstIndex(of: "=") else {
            fail(number, "expected NAME=VALUE, got \"\(Self.redacted(text))\"")
            pendingIsValid = false
            return
        }
        let name = text[..<equals].trimmingASCIIWhitespace().lowercased()
        let value = String(text[text.index(after: equals)...].trimmingASCIIWhitespace())
        guard pending != nil else { return }  // the URL line already failed; report only its error
        switch name {
        case "out":
            guard pending?.out == nil else { return invalid(number, "out= given twice") }
            guard !value.isEmpty else { return invalid(number, "out= is empty") }
            guard !value.hasPrefix("/"), !Self.climbs(value) else {
                return invalid(number, Self.leaving("out", value))
            }
            guard value != "." else { return invalid(number, "out=. is not a file name") }
            pending?.out = FileNaming.sanitize(value)
        case "dir":
            guard pending?.dir.isEmpty ?? true else { return invalid(number, "dir= given twice") }
            guard !value.isEmpty else { return invalid(number, "dir= is empty") }
            guard !value.hasPrefix("/"), !Self.climbs(value) else {
                return invalid(number, Self.leaving("dir", value))
            }
            pending?.dir = value.split(separator: "/").map(String.init).filter { $0 != "." }.map(FileNaming.sanitize)
        case "checksum":
            guard pending?.checksum == nil else { return invalid(number, "checksum= given twice") }
            guard let checksum = Checksum(parsing: value) else {
                return invalid(number, "invalid checksum \"\(value)\" (expected md5=, sha-1=, sha-256= or sha-512= and hex digits)")
            }
            pending?.checksum = checksum
        default:
            invalid(number, "unknown option \"\(Self.redacted(String(name)))\" (known: out, dir, checksum)")
        }
    }

    private mutating func invalid(_ number: Int, _ reason: String) {
        fail(number, reason)
        pendingIsValid = false
    }

    /// Whether the authority of `text` (`scheme://[user@]host:PORT/…`) writes a port after its host.
    private static func writesAPort(_ text: String) -> Bool {
        guard let slashes = text.firstRange(of: "://") else { return false }
        let authority = text[slashes.upperBound...].prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostAndPort = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? authority[...]
        let afterHost = hostAndPort.hasPrefix("[") ? hostAndPort.drop { $0 != "]" }.dropFirst() : hostAndPort.drop { $0 != ":" }
        return afterHost.hasPrefix(":") && afterHost.count > 1
    }

    /// Why an `out=` or `dir=` value with `..` or a leading `/` is refused: it would leave the output
    /// directory, or, when it would not (`a/../b`), `..` is refused anyway (the rule is simple to state).
    private static func leaving(_ key: String, _ value: String) -> String {
        var depth = 0
        for part in value.split(whereSeparator: { $0 == "/" || $0 == "\\" }) where part != "." {
            depth += part == ".." ? -1 : 1
            if depth < 0 { break }
        }
        guard !value.hasPrefix("/"), depth >= 0 else { return "\(key)=\(value) would leave the output directory" }
        return "\(key)=\(value): '..' is not allowed in \(key)= (write the path without it)"
    }

    /// Whether a relative path has a `..` component (after splitting on `/` and `\`).
    ///
    /// A path of ASCII alone is read byte by byte (there, bytes and characters split alike); splitting it
    /// into `Character`s cost about 4,500 instructions an `out=` or `dir=` line (callgrind). Any other
    /// path goes the way of characters from its first byte: a combining mark after a `/` joins it, and
    /// the `/` then separates nothing (found by a review: `../` and U+0301 must stay one component).
    private static func climbs(_ path: String) -> Bool {
        var path = path
        let asciiAnswer: Bool? = path.withUTF8 { bytes in
            guard bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
            var componentStart = 0
            for index in 0...bytes.count {
                let byte = index < bytes.count ? bytes[index] : UInt8(ascii: "/")
                guard byte == UInt8(ascii: "/") || byte == UInt8(ascii: "\\") else { continue }
                if index - componentStart == 2, bytes[componentStart] == UInt8(ascii: "."),
                    bytes[componentStart + 1] == UInt8(ascii: ".")
                {
                    return true
                }
                componentStart = index + 1
            }
            return false
        }
        return asciiAnswer ?? path.split(whereSeparator: { $0 == "/" || $0 == "\\" }).contains { $0 == ".." }
    }

    /// A URL-ish text without credentials, for error messages.
    private static func redacted(_ text: String) -> String {
        URLRedaction.redactingCredentials(in: text)
    }

    /// Whether `text` holds a blank or a control character (``isBlankOrControl(_:)``). Text of ASCII alone
    /// is read byte by byte: through `unicodeScalars` the check cost about 860 instructions a URL.
    private static func containsBlankOrControl(_ text: String) -> Bool {
        var text = text
        let asciiAnswer: Bool? = text.withUTF8 { bytes in
            for byte in bytes {
                if byte <= 0x20 || byte == 0x7F { return true }
                if byte >= 0x80 { return nil }
            }
            return false
        }
        return asciiAnswer ?? text.unicodeScalars.contains(where: isBlankOrControl)
    }

    /// Whether a character cannot be in a URL as written: a blank (Unicode whitespace) or a control
    /// character. ASCII first: the Unicode property lookup costs some 300 instructions a character (a
    /// third of a list's checking, callgrind), and no ASCII character above the space is whitespace.
    private static func isBlankOrControl(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 0x80 { return value <= 0x20 || value == 0x7F }
        return value <= 0x9F || scalar.properties.isWhitespace
    }

    /// `text` with its blanks beyond ASCII written as `\u{…}`: a no-break or an ideographic space looks
    /// like a space in a message, and the reader must see which character was refused. (Control
    /// characters are escaped when any message is printed, see `PrintableText`.)
    private static func showingWideBlanks(_ text: String) -> String {
        PrintableText.escaping(text) { $0.value > 0x9F && $0.properties.isWhitespace }
    }
}
