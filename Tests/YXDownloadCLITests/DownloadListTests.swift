import Foundation
import XCTest
import YXDownload

@testable import YXDownloadCLI

/// The input list format (SPEC §4), parsed line by line.
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
                "urls.txt:14: URL without a host: https://…@",
            ])
        // Only the entries without errors come out; a `/` inside out= is replaced, never followed.
        XCTAssertEqual(entries.map(\.line), [12])
        XCTAssertEqual(entries.first?.out, "sub_name")
        XCTAssertFalse(errors.joined().contains("secret"), "credentials never appear in messages")
    }

    /// A URL longer than servers and curl take is an input error (a megabyte-long one failed as "the
    /// server sent a response header larger than curl accepts": found by a review).
    func testAVeryLongURLIsAnInputError() {
        let long = "http://a.example/" + String(repeating: "x", count: DownloadListParser.maximumURLLength)
        var parser = DownloadListParser(fileName: "l.txt")
        _ = parser.consume(long, number: 1)
        _ = parser.finish()
        XCTAssertEqual(
            parser.errors.map(\.description),
            ["l.txt:1: URL longer than \(DownloadListParser.maximumURLLength) bytes (\(long.utf8.count))"])
        // Counted as sent: "é" goes as six bytes, "%C3%A9" (found by a review).
        let accented = "http://a.example/" + String(repeating: "é", count: 30_000)
        XCTAssertLessThan(accented.utf8.count, DownloadListParser.maximumURLLength)
        guard case .failure(let problem) = DownloadListParser.downloadURL(accented) else { return XCTFail("accepted") }
        XCTAssertTrue(problem.description.hasPrefix("URL longer than 65536 bytes once %-encoded ("), problem.description)
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

    /// Found by a helper's review: a list saved with a byte order mark lost its first line, and a tab,
    /// a space or a NUL inside a URL line was escaped into the path instead of being reported.
    func testAByteOrderMarkIsSkippedAndBlanksInAURLAreErrors() {
        let (entries, errors) = parse(
            "\u{FEFF}https://example.com/bom.bin\nhttps://example.com/a.bin\thttps://example.com/b.bin\n"
                + "https://example.com/c.bin # comment\nhttps://example.com/n\u{0}ul.bin\nhttp://127.0.0.1:99999/x\n"
                + "http://127.0.0.1:65535/ok\n")
        XCTAssertEqual(entries.map(\.url.absoluteString), ["https://example.com/bom.bin", "http://127.0.0.1:65535/ok"])
        XCTAssertEqual(
            errors,
            [
                "urls.txt:2: not a URL: https://example.com/a.bin\\u{9}https://example.com/b.bin (a URL holds no spaces or control characters; write a space as %20)",
                "urls.txt:3: not a URL: https://example.com/c.bin # comment (a URL holds no spaces or control characters; write a space as %20)",
                "urls.txt:4: not a URL: https://example.com/n\\u{0}ul.bin (a URL holds no spaces or control characters; write a space as %20)",
                "urls.txt:5: port 99999 is out of range (1 to 65535): http://127.0.0.1:99999/x",
            ])
        // An indented URL is an option line; its credentials stay hidden in the message all the same.
        let (_, indented) = parse("https://example.com/a\n  https://eve:hunter2@host/x\n  https://eve:hunter3@host/y?a=b\n")
        XCTAssertEqual(
            indented,
            [
                "urls.txt:2: expected NAME=VALUE, got \"https://…@host/x\"",
                "urls.txt:3: unknown option \"https://…@host/y?a\" (known: out, dir, checksum)",
            ])
        // A port too large for `URL` to keep, and a C1 control character (found by a helper's review).
        XCTAssertEqual(
            parse("http://h:99999999999999999999/x\nhttp://h/a\u{9B}b\nhttp://[::1]:8080/ok\n").errors,
            [
                "urls.txt:1: the port is out of range (1 to 65535): http://h:99999999999999999999/x",
                "urls.txt:2: not a URL: http://h/a\\u{9B}b (a URL holds no spaces or control characters; write a space as %20)",
            ])
        // Whitespace beyond ASCII (a no-break space, an ideographic space) is a blank too, written out so
        // that the reader sees it; a letter beyond ASCII is not a blank.
        let (wide, wideErrors) = parse("http://h/a\u{A0}b\nhttp://h/a\u{3000}b\nhttp://h/caf\u{E9}\n")
        XCTAssertEqual(wide.map(\.url.absoluteString), ["http://h/caf%C3%A9"])
        XCTAssertEqual(
            wideErrors,
            [
                "urls.txt:1: not a URL: http://h/a\\u{A0}b (a URL holds no spaces or control characters; write a space as %20)",
                "urls.txt:2: not a URL: http://h/a\\u{3000}b (a URL holds no spaces or control characters; write a space as %20)",
            ])
        // Only at the start of the list.
        XCTAssertEqual(parse("https://example.com/a\n\u{FEFF}https://example.com/b").errors.count, 1)
        // A right-to-left override in a quoted line is written out, not shown reordered (found by a review).
        XCTAssertEqual(
            parse("https://example.com/a\n  out=../a\u{202E}txt.exe\n").errors,
            ["urls.txt:2: out=../a\\u{202E}txt.exe would leave the output directory"])
        // So is a line separator, which would break the printed line, and a zero-width space.
        XCTAssertEqual(
            parse("https://example.com/a\n  out=../a\u{2028}b\u{200B}c\n").errors,
            ["urls.txt:2: out=../a\\u{2028}b\\u{200B}c would leave the output directory"])
    }

    /// `..` stays refused in `out=` and `dir=`, but one that stays inside is not said to leave it.
    func testDotDotInsideTheFolderIsRefusedForWhatItIs() {
        let (_, errors) = parse("https://example.com/a\n  dir=a/b/../c\nhttps://example.com/b\n  dir=a/../../c\n")
        XCTAssertEqual(
            errors,
            [
                "urls.txt:2: dir=a/b/../c: '..' is not allowed in dir= (write the path without it)",
                "urls.txt:4: dir=a/../../c would leave the output directory",
            ])
    }

    /// Lines of ASCII alone are checked on their bytes (a `..` component, a blank or a control character
    /// in a URL), others through their characters: both ways must refuse what the characters' way always
    /// refused. Each ASCII value is also tried with non-ASCII text before it, in it and after it; a
    /// combining mark right after a separator joins it, so `../` and U+0301 are one component (found by a
    /// review of the byte way, which first answered "..").
    func testASCIILinesAreRefusedByTheSameRulesAsOthers() {
        let paths = [
            "..", "../a", "a/..", "a/../b", "a\\..\\b", "..\\a", "a\\..", "a//..//b", "...", "a..", "..a", ".a.",
            "a/./b", "a/.../b", "a/b.", "a", "a/b/c",
        ]
        let variants = paths.flatMap { [$0, "é/" + $0, $0 + "é", $0 + "/\u{301}", $0 + "\\\u{301}", $0 + "/\u{301}/b"] }
        for key in ["out", "dir"] {
            for path in variants {
                let errors = parse("https://example.com/x\n  \(key)=\(path)\n").errors
                let climbs = path.split(whereSeparator: { $0 == "/" || $0 == "\\" }).contains("..")
                XCTAssertEqual(errors.isEmpty, !climbs, "\(key)=\(path): \(errors)")
            }
        }
        // The same for a URL: a blank or a control character anywhere in it, said as such (not left to
        // `URL(string:)`, which would escape some of them).
        for (path, refused) in [
            ("a b", true), ("a\tb", true), ("a\u{7F}b", true), ("a\u{1}b", true), ("a\u{0}b", true), ("a%20b", false),
            ("a~b", false),
        ] {
            for url in ["http://h/\(path)", "http://h/é\(path)", "http://h/\(path)é"] {
                let errors = parse(url).errors
                XCTAssertEqual(errors.count, refused ? 1 : 0, url)
                XCTAssertEqual(errors.first?.contains("a URL holds no spaces or control characters") ?? false, refused, url)
            }
        }
    }

    func testReasonsShowControlCharactersAsEscapes() {
        // Found by `scripts/fuzz list-parser` (issue 12): a reason quoted the line's control characters as
        // they were, so a stray CR or an escape sequence in a list broke the `FILE:LINE: reason` line or
        // drove the terminal.
        let (_, errors) = parse(
            "\u{16} colour=blue\nhttps://example.com/a\n  noequals\u{1B}[31m\nbad\u{0D}line\n  tab\there")
        XCTAssertEqual(
            errors,
            [
                "urls.txt:1: not a URL: \\u{16} colour=blue",
                "urls.txt:3: expected NAME=VALUE, got \"noequals\\u{1B}[31m\"",
                "urls.txt:4: not a URL: bad\\u{D}line",
                "urls.txt:5: expected NAME=VALUE, got \"tab\\u{9}here\"",
            ])
    }
}
