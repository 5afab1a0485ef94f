import Foundation

@testable import YXDownload

// Fuzz target `response-headers`: TransferResponse.consume(headerBytes:) / consume(headerLine:) and the
// fields read from it (status, Content-Length, Content-Range, Retry-After, ETag, Last-Modified).
//
// The input is a stream of header lines as curl's header callback hands them over, each with its line
// ending (redirects give several status lines). Properties:
// - the byte-level parser agrees with a plain reference parser after every line, and with its own
//   `String` entry point;
// - the status is 0 (no three digits) or a three-digit code; only the kept fields are stored, trimmed
//   (repeated Content-Length fields as one list);
// - Content-Length is non-negative and read as the reference reads it; it is invalid exactly when it is
//   there, unusable, and the body is not chunked; a Content-Range has 0 ≤ start ≤ end < total (total ≥ 0), or is
//   `*/total`; Retry-After is finite and non-negative; ETag and Last-Modified, which go back to the
//   server in `If-Range`, hold no control character.

private func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }

private func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
    var slice = bytes
    while let first = slice.first, isSpace(first) { slice.removeFirst() }
    while let last = slice.last, isSpace(last) { slice.removeLast() }
    return slice
}

/// A deliberately plain restatement of how header lines are read, to compare the fast parser with.
private struct ReferenceResponse {
    var status = 0
    var headers: [String: String] = [:]

    mutating func consume(_ raw: ArraySlice<UInt8>) {
        let line = trimmed(raw)
        if line.isEmpty { return }
        if line.starts(with: Array("HTTP/".utf8)) {
            let afterVersion = line.drop { $0 != 0x20 }.drop { $0 == 0x20 }
            let digits = afterVersion.prefix { (0x30...0x39).contains($0) }.prefix(3)
            status = digits.count == 3 ? Int(String(decoding: digits, as: UTF8.self)) ?? -1 : 0
            headers = [:]
            return
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return }
        let lowered = trimmed(line[..<colon]).map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }
        let name = String(decoding: lowered, as: UTF8.self)
        guard TransferResponse.keptFieldNames.contains(name) else { return }
        let value = String(decoding: trimmed(line[(colon + 1)...]), as: UTF8.self)
        // Repeated `Content-Length` fields are all kept, as a list (lengths that disagree are invalid).
        if name == "content-length", let earlier = headers[name] {
            headers[name] = earlier + "," + value
        } else {
            headers[name] = value
        }
    }
}

/// The kept fields by name, as the reference keeps them (`TransferResponseFields` has one slot per name of
/// `TransferResponse.keptFieldNames` since it replaced a dictionary).
private func byName(_ fields: TransferResponseFields) -> [String: String] {
    var result: [String: String] = [:]
    for (index, name) in TransferResponse.keptFieldNames.enumerated() {
        if let value = fields[index] { result[name] = value }
    }
    return result
}

private func describe(_ lines: ArraySlice<ArraySlice<UInt8>>) -> String {
    lines.map { String(decoding: $0, as: UTF8.self).debugDescription }.joined(separator: " ")
}

/// `Content-Length` as the reference reads it: each item of the list (one, or more for a repeated field)
/// digits that fit in an `Int64`, and all of them equal.
private func referenceLength(_ value: String) -> Int64? {
    let numbers = value.split(separator: ",", omittingEmptySubsequences: false).map { item -> Int64? in
        let digits = trimmed(ArraySlice(item.utf8))
        guard !digits.isEmpty, digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int64(String(decoding: digits, as: UTF8.self))
    }
    guard let first = numbers.first, let first, numbers.allSatisfy({ $0 == first }) else { return nil }
    return first
}

/// The properties every state of a response must have.
private func checkFields(_ response: TransferResponse, _ lines: ArraySlice<ArraySlice<UInt8>>) {
    require((0...999).contains(response.status), "status \(response.status) after \(describe(lines))")
    for (name, value) in byName(response.headers) {
        require(TransferResponse.keptFieldNames.contains(name), "field \(name) was kept after \(describe(lines))")
        let bytes = Array(value.utf8)
        require(
            bytes.first.map { !isSpace($0) } ?? true && bytes.last.map { !isSpace($0) } ?? true,
            "\(name) value \(value.debugDescription) is not trimmed")
    }
    if let length = response.contentLength {
        require(length >= 0, "Content-Length \(length) from \(describe(lines))")
    }
    let field = response.headers.contentLength
    let expected = field.flatMap(referenceLength)
    require(
        response.contentLength == expected
            && response.hasInvalidContentLength == (field != nil && expected == nil && !response.isChunked),
        "Content-Length \(field.debugDescription) read as \(response.contentLength.debugDescription) from "
            + describe(lines))
    if let range = response.contentRange {
        switch (range.start, range.end) {
        case (let start?, let end?):
            require(0 <= start && start <= end, "Content-Range \(range) from \(describe(lines))")
            if let total = range.total { require(end < total, "Content-Range \(range) from \(describe(lines))") }
        case (nil, nil):
            require(range.total.map { $0 >= 0 } ?? false, "Content-Range \(range) from \(describe(lines))")
        default:
            require(false, "Content-Range \(range) with one bound from \(describe(lines))")
        }
    }
    if let seconds = response.retryAfter {
        require(seconds.isFinite && seconds >= 0, "Retry-After \(seconds) from \(describe(lines))")
    }
    for validator in [response.etag, response.lastModified].compactMap({ $0 }) {
        require(
            !validator.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F },
            "validator \(validator.debugDescription) would go back to the server in If-Range")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzResponseHeaders(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = inputBytes(data, count)
    var lines: [ArraySlice<UInt8>] = []
    var start = 0
    for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") {
        lines.append(bytes[start...index])
        start = index + 1
    }
    if start < bytes.count { lines.append(bytes[start...]) }

    var response = TransferResponse()
    var reference = ReferenceResponse()
    for (index, line) in lines.enumerated() {
        line.withUnsafeBytes { response.consume(headerBytes: $0) }
        reference.consume(line)
        let seen = lines[...index]
        require(
            response.status == reference.status,
            "status \(response.status), reference \(reference.status) after \(describe(seen))")
        require(
            byName(response.headers) == reference.headers,
            "fields \(byName(response.headers)), reference \(reference.headers) after \(describe(seen))")
        checkFields(response, seen)
    }

    // Valid UTF-8 gives the same result through the `String` entry point.
    if String(validating: bytes, as: UTF8.self) != nil {
        var viaString = TransferResponse()
        for line in lines { viaString.consume(headerLine: String(decoding: line, as: UTF8.self)) }
        require(
            viaString.status == response.status && byName(viaString.headers) == byName(response.headers),
            "String and bytes disagree on \(describe(lines[...]))")
    }
    return 0
}
