/// How a `Range` header applies to a body of a given size.
enum ByteRangeRequest: Equatable {
    /// Serve the whole body with `200`: no header, a syntax we do not support, or a range that is
    /// invalid (RFC 9110 says to ignore it).
    case ignored

    /// Serve these offsets with `206`.
    case satisfiable(Range<Int64>)

    /// Answer `416` with `Content-Range: bytes */SIZE`.
    case unsatisfiable

    /// Evaluates a `Range` header value against a body of `size` bytes.
    ///
    /// Supports one range of the `bytes` unit: `a-b`, `a-` and `-n`. Multiple ranges are ignored.
    ///
    /// - Parameters:
    ///   - header: The header value, e.g. `"bytes=0-99"`.
    ///   - size: The size of the body.
    /// - Returns: What to serve.
    static func evaluate(_ header: String, size: Int64) -> ByteRangeRequest {
        let value = header.trimmingASCIISpaces()
        guard let equals = value.firstIndex(of: "="),
            value[..<equals].trimmingASCIISpaces().lowercased() == "bytes"
        else {
            return .ignored
        }
        let spec = value[value.index(after: equals)...].trimmingASCIISpaces()
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else {
            return .ignored
        }
        let first = spec[..<dash].trimmingASCIISpaces()
        let last = spec[spec.index(after: dash)...].trimmingASCIISpaces()

        switch (Self.number(first), Self.number(last)) {
        case (nil, let suffix?) where first.isEmpty:
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .satisfiable(max(0, size - suffix)..<size)
        case (let start?, nil) where last.isEmpty:
            guard start < size else { return .unsatisfiable }
            return .satisfiable(start..<size)
        case (let start?, let end?):
            guard start <= end else { return .ignored }
            guard start < size else { return .unsatisfiable }
            return .satisfiable(start..<min(end, size - 1) + 1)
        default:
            return .ignored
        }
    }

    /// Parses a non-empty run of ASCII digits that fits in `Int64`.
    private static func number(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return Int64(text)
    }
}

extension StringProtocol {
    /// The string without leading and trailing spaces and tabs.
    func trimmingASCIISpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = self.firstIndex(where: { !isSpace($0) }),
            let end = self.lastIndex(where: { !isSpace($0) })
        else {
            return ""
        }
        return String(self[start...end])
    }
}
