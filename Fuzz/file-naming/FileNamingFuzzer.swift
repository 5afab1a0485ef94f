import Foundation

@testable import YXDownload

// Fuzz target `file-naming`: FileNaming.sanitize, FileNaming.percentDecoded and FileNaming.name(for:).
//
// Properties (SPEC §4 "Naming"):
// - a sanitized name is never empty (for a non-empty input), `.` or `..`, and has no `/`, `\`, NUL or
//   control character; sanitizing twice changes nothing; every scalar stays one scalar;
// - the decoder agrees with Foundation's `removingPercentEncoding` (same text, or both nil), except
//   that it gives nil where the escapes are not UTF-8 and Foundation substitutes U+FFFD;
// - a name made from a URL is always a safe component, does not depend on the query, and is the last
//   path component decoded exactly once.

/// Characters that `URL(string:)` keeps as they are in a path: unreserved, sub-delims, `:` and `@`.
private let plainPathBytes = Set(
    Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@".utf8))

/// Whether `text` is a path segment that `URL(string:)` takes verbatim: plain characters and well-formed
/// `%XX` escapes.
private func isVerbatimSegment(_ text: String) -> Bool {
    let bytes = Array(text.utf8)
    var index = 0
    while index < bytes.count {
        if bytes[index] == UInt8(ascii: "%") {
            guard index + 2 < bytes.count, bytes[index + 1].isHexDigit, bytes[index + 2].isHexDigit else {
                return false
            }
            index += 3
        } else {
            guard plainPathBytes.contains(bytes[index]) else { return false }
            index += 1
        }
    }
    return true
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFileNaming(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let text = String(decoding: inputBytes(data, count), as: UTF8.self)

    // The sanitizer.
    let sanitized = FileNaming.sanitize(text)
    require(sanitized.isEmpty == text.isEmpty, "sanitize(\(text.debugDescription)) = \(sanitized.debugDescription)")
    if !text.isEmpty {
        require(isSafeComponent(sanitized), "unsafe: \(sanitized.debugDescription) from \(text.debugDescription)")
    }
    let twice = FileNaming.sanitize(sanitized)
    require(twice.utf8.elementsEqual(sanitized.utf8), "sanitize is not idempotent on \(text.debugDescription)")
    require(
        sanitized.unicodeScalars.count == text.unicodeScalars.count,
        "sanitize(\(text.debugDescription)) changed the number of scalars")

    // The decoder against Foundation.
    let decoded = FileNaming.percentDecoded(text[...].utf8)
    let reference = text.removingPercentEncoding
    // Where the escapes decode to bytes that are not UTF-8, Foundation on Linux substitutes U+FFFD; the
    // decoder gives nil and the name keeps its escapes. Everywhere else the two agree.
    let agrees =
        decoded.map { Array($0.utf8) } == reference.map { Array($0.utf8) }
        || (decoded == nil && reference?.unicodeScalars.contains("\u{FFFD}") == true)
    require(
        agrees,
        "decoded \(text.debugDescription): \(decoded.debugDescription), Foundation: \(reference.debugDescription)")

    // Names from URLs: the text as a whole URL, and as the path after a host.
    for candidate in [text, "https://example.com/dir/" + text] {
        guard let url = URL(string: candidate) else { continue }
        let name = FileNaming.name(for: url)
        require(isSafeComponent(name), "name(for: \(candidate.debugDescription)) = \(name.debugDescription)")
    }
    if !text.contains("?"), !text.contains("#"),
        let plain = URL(string: "https://example.com/dir/" + text),
        let withQuery = URL(string: "https://example.com/dir/" + text + "?name=x/y%2Fz#frag")
    {
        let name = FileNaming.name(for: plain)
        let other = FileNaming.name(for: withQuery)
        require(
            name.utf8.elementsEqual(other.utf8),
            "a query changed the name of \(text.debugDescription): \(name.debugDescription), \(other.debugDescription)")
    }
    if isVerbatimSegment(text), let url = URL(string: "https://example.com/dir/" + text) {
        let expected = text.isEmpty ? "index.html" : FileNaming.sanitize(decoded ?? text)
        let name = FileNaming.name(for: url)
        require(
            name.utf8.elementsEqual(expected.utf8),
            "name(for: …/\(text.debugDescription)) = \(name.debugDescription), expected \(expected.debugDescription)")
    }
    return 0
}
