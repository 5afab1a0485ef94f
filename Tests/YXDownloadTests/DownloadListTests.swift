import Foundation
import XCTest

@testable import YXDownload

final class DownloadListTests: XCTestCase {
    private func parse(_ text: String) -> (entries: [DownloadListEntry], errors: [String]) {
        var parser = DownloadListParser(fileName: "urls.txt")
        var entries: [DownloadListEntry] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if let entry = parser.consume(line, number: index + 1) { entries.append(entry) }
        }
        if let last = parser.finish() { entries.append(last) }
        return (entries, parser.errors.map(\.description))
    }

    func testURLsOptionsCommentsAndBlankLines() throws {
        let (entries, errors) = parse(
            """
            # a comment
            https://example.com/a.iso
              out=debian.iso
            \tdir=images/2026
              checksum=sha-256=e553d0fc963f719f4a6f13820ea805404a7f9242007dc9e233ca1be12e91f0e1

               # an indented comment
            http://example.com/b.txt\r
            """)
        XCTAssertEqual(errors, [])
        XCTAssertEqual(entries.count, 2)
        XCTAssertEqual(entries[0].url.absoluteString, "https://example.com/a.iso")
        XCTAssertEqual(entries[0].line, 2)
        XCTAssertEqual(entries[0].out, "debian.iso")
        XCTAssertEqual(entries[0].dir, ["images", "2026"])
        XCTAssertEqual(entries[0].checksum?.algorithm, .sha256)
        XCTAssertEqual(entries[1].url.absoluteString, "http://example.com/b.txt")
        XCTAssertEqual(entries[1].line, 8)
        XCTAssertNil(entries[1].out)
    }

    func testEveryBadLineIsReportedWithItsNumber() {
        let (entries, errors) = parse(
            """
              out=orphan
            ftp://example.com/x
            not a url at all
            https://example.com/ok
              out=../escape
            https://example.com/two
              dir=/etc
            https://example.com/three
              checksum=sha-256=abc
              colour=blue
              noequals
            https://example.com/fine
              out=sub/name
            https://user:secret@
            """)
        XCTAssertEqual(
            errors,
            [
                "urls.txt:1: option line without a URL above it",
                "urls.txt:2: unsupported scheme \"ftp\" (only http and https)",
                "urls.txt:3: not a URL: not a url at all",
                "urls.txt:5: out=../escape would leave the output directory",
                "urls.txt:7: dir=/etc would leave the output directory",
                "urls.txt:9: invalid checksum \"sha-256=abc\" (expected md5=, sha-1=, sha-256= or sha-512= and hex digits)",
                "urls.txt:10: unknown option \"colour\" (known: out, dir, checksum)",
                "urls.txt:11: expected NAME=VALUE, got \"noequals\"",
                "urls.txt:14: URL without a host: https://",
            ])
        // Only the entries without errors come out; a `/` inside out= is replaced, never followed.
        XCTAssertEqual(entries.map(\.line), [12])
        XCTAssertEqual(entries.first?.out, "sub_name")
        XCTAssertFalse(errors.joined().contains("secret"), "credentials never appear in messages")
    }

    func testDuplicateAndEmptyOptions() {
        let (_, errors) = parse(
            """
            https://example.com/a
              out=a
              out=b
            https://example.com/b
              dir=
              out=.
            """)
        XCTAssertEqual(
            errors,
            ["urls.txt:3: out= given twice", "urls.txt:5: dir= is empty", "urls.txt:6: out=. is not a file name"])
    }

    func testFileNamesFromURLs() {
        func name(_ text: String) -> String { FileNaming.name(for: URL(string: text)!) }
        XCTAssertEqual(name("https://x.org/a%20b.txt?v=1#frag"), "a b.txt")
        XCTAssertEqual(name("https://x.org/"), "index.html")
        XCTAssertEqual(name("https://x.org"), "index.html")
        XCTAssertEqual(name("https://x.org/dir/%2E%2E"), "__", "a decoded .. is never a name")
        XCTAssertEqual(name("https://x.org/a%2Fb"), "a_b", "a decoded / is replaced, never followed")
        XCTAssertEqual(name("https://x.org/a%5Cb"), "a_b")
        XCTAssertEqual(name("https://x.org/%00evil%0A"), "_evil_")
        XCTAssertEqual(name("https://x.org/%25252F"), "%252F", "decoded once")
        XCTAssertEqual(name("https://x.org/caf%C3%A9.txt"), "café.txt")
        XCTAssertEqual(name("https://x.org/caf%E9.txt"), "caf%E9.txt", "not UTF-8 once decoded: kept as written")
    }

    func testPercentDecodingMatchesFoundation() {
        // The byte-level decoder agrees with `removingPercentEncoding` (which it replaced for speed), except
        // that bytes which are not UTF-8 once decoded make it give up rather than insert U+FFFD.
        let pieces = ["%", "%2", "%2F", "%2f", "%25", "%C3", "%A9", "%E9", "%zz", "%00", "a", "é", "/", "2F", "%%"]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<5_000 {
            let text = (0..<Int.random(in: 0...6, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }
                .joined()
            var expected = text.removingPercentEncoding
            // Foundation repairs bytes that are not UTF-8 with U+FFFD; names keep such escapes as written.
            if expected?.contains("\u{FFFD}") ?? false { expected = nil }
            XCTAssertEqual(FileNaming.percentDecoded(text[...].utf8), expected, "\(text)")
        }
    }
}
