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
    /// Header fields, names lower-cased; the last value wins.
    var headers: [String: String] = [:]
    var effectiveURL: String?

    var contentLength: Int64? { headers["content-length"].flatMap { Int64($0) } }
    var etag: String? { headers["etag"] }
    var lastModified: String? { headers["last-modified"] }
    var isChunked: Bool { headers["transfer-encoding"]?.lowercased().contains("chunked") ?? false }

    /// `Content-Range: bytes START-END/TOTAL` (TOTAL may be `*`), or `bytes */TOTAL` on a 416.
    var contentRange: (start: Int64?, end: Int64?, total: Int64?)? {
        guard let value = headers["content-range"], value.lowercased().hasPrefix("bytes") else { return nil }
        let spec = value.dropFirst(5).trimmingASCIIWhitespace()
        let halves = spec.split(separator: "/", maxSplits: 1).map(String.init)
        guard halves.count == 2 else { return nil }
        let total = Int64(halves[1])
        if halves[0] == "*" { return (nil, nil, total) }
        let bounds = halves[0].split(separator: "-", maxSplits: 1).map { Int64($0) }
        guard bounds.count == 2, let start = bounds[0], let end = bounds[1] else { return nil }
        return (start, end, total)
    }

    /// `Retry-After` in seconds from now (delay-seconds or an HTTP date).
    var retryAfter: TimeInterval? {
        guard let value = headers["retry-after"] else { return nil }
        if let seconds = Double(value) { return max(0, seconds) }
        return HTTPDate.parse(value).map { max(0, $0.timeIntervalSinceNow) }
    }

    /// Records one header line from curl (status lines start a new response: redirects have several).
    ///
    /// Works on UTF-8 bytes: `Character` iteration (grapheme breaking) cost ~8,000 instructions a line.
    mutating func consume(headerLine raw: String) {
        let line = raw.trimmingASCIIWhitespace()
        let bytes = line.utf8
        if bytes.starts(with: "HTTP/".utf8) {
            let parts = bytes.split(separator: UInt8(ascii: " "), maxSplits: 2)
            status = parts.count > 1 ? Int(Substring(parts[1])) ?? 0 : 0
            headers = [:]
            return
        }
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return }
        let name = line[..<colon].trimmingASCIIWhitespace().lowercased()
        headers[name] = String(line[bytes.index(after: colon)...].trimmingASCIIWhitespace())
    }
}

/// HTTP dates (RFC 9110 IMF-fixdate, plus the two obsolete forms).
enum HTTPDate {
    private static let formats = ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"]

    static func parse(_ text: String) -> Date? {
        for format in formats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
