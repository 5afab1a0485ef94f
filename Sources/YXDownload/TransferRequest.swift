internal import CCurl
import Foundation

/// One HTTP GET as the transfer engine performs it.
struct TransferRequest: Sendable {
    /// The URL (http or https).
    var url: URL
    /// The first byte wanted, when a range is asked for.
    var rangeStart: Int64?
    /// The last byte wanted (inclusive); nil = to the end.
    var rangeEnd: Int64?
    /// An `If-Range` validator (an entity tag or an HTTP date).
    var ifRange: String?
    /// Extra request headers, as "Name: value".
    var headers: [String] = []
    var userAgent: String
    var connectTimeout: TimeInterval
    /// Give up when no byte arrived for this long.
    var stallTimeout: TimeInterval
    var verifyTLS: Bool
    /// What a verified connection trusts.
    var trust = TrustStore.system
    var maxRedirects: Int = 10

    /// The value of curl's `CURLOPT_RANGE`, if any.
    var curlRange: String? {
        guard let rangeStart else { return nil }
        if let rangeEnd { return "\(rangeStart)-\(rangeEnd)" }
        return "\(rangeStart)-"
    }
}

/// The head of the final response (after redirects).
struct TransferResponse: Sendable {
    var status: Int = 0
    /// The header fields the engine reads (``keptFieldNames``), by lower-cased name; the last value wins,
    /// but for `Content-Length`, which keeps them all (``hasInvalidContentLength``).
    var headers = TransferResponseFields()
    var effectiveURL: String?

    /// The body's length from `Content-Length`: nil when there is none, or when it is no length at all
    /// (``hasInvalidContentLength``). Repeated fields, or a list, of one value (`5, 5`) give that value.
    var contentLength: Int64? { headers.contentLength.flatMap(Self.length) }
    /// Whether a `Content-Length` is there but frames nothing a client can trust: not a decimal number,
    /// one too large for a file, or fields that disagree (`5` and `7`). RFC 9112 §6.3 makes such a
    /// response an unrecoverable error; taken for "no length", its body was read to the connection's
    /// close and saved whole whatever arrived (found by a user test: `Content-Length: 99999999999999999999999`
    /// and 5 bytes gave a 5-byte file under its final name). `Transfer-Encoding: chunked` frames the
    /// body instead, and then the length does not matter.
    var hasInvalidContentLength: Bool { headers.contentLength != nil && contentLength == nil && !isChunked }
    /// The entity tag, unless it holds a control character (it goes back to the server in `If-Range`).
    var etag: String? { headers.etag.flatMap(Self.validator) }
    /// `Last-Modified`, unless it holds a control character (it goes back to the server in `If-Range`).
    var lastModified: String? { headers.lastModified.flatMap(Self.validator) }
    /// Whether the body is framed by chunks: `Transfer-Encoding` ends with the coding `chunked` (RFC 9112
    /// §6.3; curl reads whole codings too, so `notchunked` is none, found by a review).
    var isChunked: Bool {
        guard let value = headers.transferEncoding else { return false }
        let last = value.split(separator: ",", omittingEmptySubsequences: false).last?.trimmingASCIIWhitespace()
        return last?.lowercased() == "chunked"
    }

    /// `Content-Range: bytes START-END/TOTAL` (TOTAL may be `*`), or `bytes */TOTAL` on a 416.
    ///
    /// Nil unless the numbers are decimals and consistent: START ≤ END, and END < TOTAL when TOTAL is known.
    var contentRange: (start: Int64?, end: Int64?, total: Int64?)? {
        guard let value = headers.contentRange, value.lowercased().hasPrefix("bytes") else { return nil }
        let spec = value.dropFirst(5).trimmingASCIIWhitespace()
        let halves = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let total = Self.decimal(halves[1])
        guard total != nil || halves[1] == "*" else { return nil }
        if halves[0] == "*" { return total.map { (nil, nil, $0) } }
        let bounds = halves[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, let start = Self.decimal(bounds[0]), let end = Self.decimal(bounds[1]), start <= end,
            total.map({ end < $0 }) ?? true
        else { return nil }
        return (start, end, total)
    }

    /// `Retry-After` in seconds from now: delay-seconds (digits only, RFC 9110 §10.2.3) or an HTTP date.
    /// Anything else (a negative number, an exponent, words) is no `Retry-After` at all, and so is a number
    /// too large to be finite.
    var retryAfter: TimeInterval? {
        guard let value = headers.retryAfter, !value.isEmpty else { return nil }
        if value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            return Double(value).flatMap { $0.isFinite ? $0 : nil }
        }
        return HTTPDate.parse(value).map { max(0, $0.timeIntervalSinceNow) }
    }

    /// `Content-Length`'s value: one decimal, or a list of equal ones (what a field sent twice becomes).
    private static func length(_ value: String) -> Int64? {
        guard value.utf8.contains(UInt8(ascii: ",")) else { return decimal(value) }
        var length: Int64?
        for item in value.split(separator: ",", omittingEmptySubsequences: false) {
            let item = decimal(item.trimmingASCIIWhitespace())
            guard let item, length == nil || length == item else { return nil }
            length = item
        }
        return length
    }

    /// A length or a byte position: ASCII digits only (`Int64(_:)` also takes a sign), nil when it
    /// overflows.
    private static func decimal(_ text: some StringProtocol) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return Int64(text)
    }

    /// The value, unless it holds a control character other than a tab (a bare CR, a NUL).
    private static func validator(_ value: String) -> String? {
        var bytes = value  // `withUTF8`: a loop over the contiguous bytes, not through `utf8`'s iterator
        return bytes.withUTF8 { $0.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F } } ? nil : value
    }

    /// The header fields the engine reads; every other field is skipped without making a `String`.
    static let keptFieldNames = [
        "content-length", "content-range", "etag", "last-modified", "retry-after", "transfer-encoding",
    ]
    private static let keptFields = keptFieldNames.map { Array($0.utf8) }
    /// The index of `content-length` in ``keptFieldNames``.
    private static var contentLengthField: Int { 0 }

    /// Records one header line from curl (status lines start a new response: redirects have several).
    mutating func consume(headerLine raw: String) {
        var line = raw
        line.withUTF8 { consume(headerBytes: UnsafeRawBufferPointer($0)) }
    }

    /// What one header line says to a response (``read(headerBytes:)``).
    enum HeaderLine: Equatable {
        /// A status line: a new response starts (redirects have several); 0 when it has no three digits.
        case status(Int)
        /// A kept field (an index in ``keptFieldNames``) and where its value is in the line, trimmed.
        case field(Int, Range<Int>)
        /// Anything else: a field the engine does not read, the blank line that ends the head.
        case skipped
    }

    /// Records one header line, in the form curl's header callback hands it over (with its CR LF): what
    /// ``read(headerBytes:)`` finds, recorded. (The callback itself reads first and records only the lines
    /// a response keeps.)
    mutating func consume(headerBytes line: UnsafeRawBufferPointer) {
        record(Self.read(headerBytes: line), of: line)
    }

    /// Records what ``read(headerBytes:)`` found in `line`; a skipped line changes nothing.
    mutating func record(_ found: HeaderLine, of line: UnsafeRawBufferPointer) {
        switch found {
        case .status(let code):
            status = code
            headers = TransferResponseFields()
        case .field(let field, let value):
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: line[value]), as: UTF8.self)
            if field == Self.contentLengthField, let earlier = headers[field] {
                // Both values are kept, as one list: lengths that disagree make the length invalid.
                headers[field] = earlier + "," + text
            } else {
                headers[field] = text
            }
        case .skipped:
            break
        }
    }

    /// Reads one header line without a response to record it in, so that the lines a response does not
    /// keep (most of them) cost the engine no access to its transfer's state.
    ///
    /// Works on the raw bytes and keeps only ``keptFieldNames``: with `String` and `Character` operations
    /// this cost about 43,000 instructions per downloaded file (callgrind), more than curl's own work.
    static func read(headerBytes line: UnsafeRawBufferPointer) -> HeaderLine {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        func lower(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }
        var start = 0
        var end = line.count
        while start < end, isSpace(line[start]) { start += 1 }
        while end > start, isSpace(line[end - 1]) { end -= 1 }
        guard start < end, let base = line.baseAddress else { return .skipped }
        if end - start >= 5, line[start] == UInt8(ascii: "H"), line[start + 1] == UInt8(ascii: "T"),
            line[start + 2] == UInt8(ascii: "T"), line[start + 3] == UInt8(ascii: "P"), line[start + 4] == UInt8(ascii: "/")
        {
            // "HTTP/1.1 206 Partial Content": the number after the first space.
            var index = start
            while index < end, line[index] != 0x20 { index += 1 }
            while index < end, line[index] == 0x20 { index += 1 }
            var code = 0
            var digits = 0
            while index < end, line[index] >= UInt8(ascii: "0"), line[index] <= UInt8(ascii: "9"), digits < 3 {
                code = code * 10 + Int(line[index] - UInt8(ascii: "0"))
                index += 1
                digits += 1
            }
            return .status(digits == 3 ? code : 0)
        }
        guard let found = memchr(base + start, Int32(UInt8(ascii: ":")), end - start) else { return .skipped }
        let colon = UnsafeRawPointer(found) - base
        var nameEnd = colon
        while nameEnd > start, isSpace(line[nameEnd - 1]) { nameEnd -= 1 }
        let nameLength = nameEnd - start
        guard
            let field = keptFields.firstIndex(where: { name in
                name.count == nameLength
                    && name.indices.allSatisfy { lower(line[start + $0]) == name[$0] }
            })
        else { return .skipped }
        var valueStart = colon + 1
        while valueStart < end, isSpace(line[valueStart]) { valueStart += 1 }
        return .field(field, valueStart..<end)
    }
}

/// HTTP dates (RFC 9110 IMF-fixdate, plus the two obsolete forms), read by libcurl's `curl_getdate`.
///
/// `DateFormatter` did this before, the only use of Foundation's formatters in the downloader: with it,
/// the `yxdownload` binary linked ICU and the rest of swift-corelibs-foundation.
enum HTTPDate {
    /// The date, or nil when `text` is not an HTTP date.
    ///
    /// Only printable ASCII reaches the parser: every HTTP date is. (On Linux, `DateFormatter` stopped the
    /// process on text such as `Sun` and a combining mark, U+05BC, which a server can send in
    /// `Retry-After`: found by `scripts/fuzz`.) `curl_getdate` also takes a date without its time, and
    /// returns -1 for the last second of 1969, which is then no date: neither matters for a `Retry-After`.
    static func parse(_ text: String) -> Date? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x20 && $0 <= 0x7E }) else { return nil }
        let seconds = curl_getdate(text, nil)
        guard seconds != -1 else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}
