import Foundation
import XCTest
import YXTestServer

/// Usage, help, and the input file's checks: nothing may reach the server when the command line or the
/// list is wrong, and the exit status is 2.
final class CommandLineUsageTests: CLITestCase {
    func testUsageErrorsExitTwoWithAMessageAndMakeNoRequest() async throws {
        serveGenerated("/a.bin", size: 10, seed: 1)
        let list = try writeList(server.url("/a.bin").absoluteString + "\n")
        let cases: [([String], String)] = [
            ([], "nothing to download: give URLs, a list file, or -i FILE (see --help)"),
            (["-j", "0", list], "--jobs must be between 1 and 1000"),
            (["-x", "17", list], "--connections must be between 1 and 16"),
            (["--retries", "-1", list], "--retries must be between 0 and 100 (got -1)"),
            // A negative number is a value, not a missing one (found by a helper's review).
            (["-j", "-1", list], "--jobs must be between 1 and 1000 (got -1)"),
            (["--timeout", "-5", list], "--timeout must be more than 0 and at most 86400 seconds (got -5.0)"),
            (["--timeout", "0", list], "--timeout must be more than 0 and at most 86400 seconds (got 0.0)"),
            // Too long for the engine's clock: a crash before (found by a review).
            (["--timeout", "1e20", list], "--timeout must be more than 0 and at most 86400 seconds (got 1e+20)"),
            (["--timeout", "nan", list], "--timeout must be more than 0 and at most 86400 seconds (got nan)"),
            (["--connect-timeout", "1e308", list], "--connect-timeout must be more than 0 and at most 86400 seconds"),
            (["--max-speed", "fast", list], "--max-speed"),
            (["-H", "no colon", list], "--header must look like \"Name: value\", on one line (got one that starts \"no\"; its value is not shown)."),
            (["-H", "X-Key: a\nb", list], "--header must look like \"Name: value\", on one line (got one that starts \"X-Key\";"),
            // A CRLF is one Character: it passed, and was sent as a second header (found by a review).
            (["-H", "X-Key: a\r\nInjected: b", list], "--header must look like \"Name: value\", on one line (got one that starts \"X-Key\";"),
            (["-U", "agent\r\nInjected: b", list], "--user-agent must be one line."),
            (["-H", "Range: bytes=0-9", list], "--header cannot set Range: yxdownload sets it itself"),
            (["--frobnicate", list], "Unknown option '--frobnicate'"),
            // Alone, an unknown option is still the error, not "nothing to download".
            (["--frobnicate"], "Unknown option '--frobnicate'"),
            (["-Z"], "Unknown option '-Z'"),
            (["-q", "--frobnicate", "-j", "3"], "Unknown option '--frobnicate'"),
            (["-j", list], "The value 'urls.txt' is invalid for '-j <N>'"),
            // A second list is refused, not silently the only one read.
            (["-i", list, "-i", list], "one list only: -i is given 2 times"),
        ]
        for ((arguments, message), output) in zip(cases, try await yxdownloadEach(cases.map(\.0))) {
            XCTAssertEqual(output.status, 2, "\(arguments): \(output.stderr)")
            XCTAssertTrue(output.stderr.contains(message), "\(arguments) → \(output.stderr)")
        }
        XCTAssertEqual(server.requestCount, 0)
        XCTAssertEqual(files(), [])
        // A mistyped credential header is refused without printing the credential (found by a review).
        let secret = try await RunningCommand(["-H", "Authorization Bearer SECRETTOKEN", list], in: work).wait()
        XCTAssertEqual(secret.status, 2, secret.stderr)
        XCTAssertFalse(secret.stderr.contains("SECRETTOKEN"), secret.stderr)
        XCTAssertTrue(secret.stderr.contains("(got one that starts \"Authorization\"; its value is not shown)"), secret.stderr)
        // A pasted token alone, without a separator, is not shown at all (found by a review).
        let tokens = ["ghp_SECRETabcdef0123456789", "Authorization=Bearer_SECRET", "X-Api-Key;SECRET"]
        for pasted in try await yxdownloadEach(tokens.map { ["-H", $0, list] }) {
            XCTAssertEqual(pasted.status, 2, pasted.stderr)
            XCTAssertFalse(pasted.stderr.contains("SECRET"), pasted.stderr)
            XCTAssertTrue(pasted.stderr.contains("(its text is not shown: it may hold a credential)"), pasted.stderr)
        }
    }

    func testMissingInputFileExitsTwo() async throws {
        let output = try await yxdownload("nowhere.txt")
        XCTAssertEqual(output.status, 2)
        XCTAssertEqual(output.stderr, "yxdownload: cannot read nowhere.txt: No such file or directory\n")
        let folder = try await yxdownload(".")
        XCTAssertEqual(folder.status, 2)
        XCTAssertEqual(folder.stderr, "yxdownload: cannot read .: it is a directory\n")

        try writeList("http://127.0.0.1:1/a\n")
        try Data().write(to: work.appendingPathComponent("occupied"))
        let blocked = try await yxdownload("urls.txt", "-d", "occupied/sub")
        XCTAssertEqual(blocked.status, 2)
        // The system's reason, not Foundation's "NSCocoaErrorDomain error 512" (found by a helper's review).
        XCTAssertEqual(blocked.stderr, "yxdownload: cannot create the output directory occupied/sub: Not a directory\n")
        let nested = try await yxdownload("urls.txt", "-d", "new/a/b", "--retries", "0", "-q")
        var isFolder: ObjCBool = false
        XCTAssertTrue(FileManager.default.fileExists(atPath: work.appendingPathComponent("new/a/b").path, isDirectory: &isFolder))
        XCTAssertTrue(isFolder.boolValue, nested.stderr)
    }

    func testEveryBadLineIsReportedWithItsNumberAndNothingIsRequested() async throws {
        serveGenerated("/ok.bin", size: 100, seed: 2)
        let ok = server.url("/ok.bin").absoluteString
        try writeList("""
            # a comment, then a good entry
            \(ok)
              out=first.bin

            ftp://127.0.0.1/file
            not a url at all
              out=orphan-of-a-bad-url.bin
            \(ok)
              out=../escape.bin
            \(ok)
              dir=/etc
            \(ok)
              checksum=sha-256=1234
              color=blue
            \(ok)
              dir=a/../../b
            """, name: "bad.txt")
        let output = try await yxdownload("bad.txt")
        XCTAssertEqual(output.status, 2)
        XCTAssertEqual(output.stdout, "")
        XCTAssertEqual(output.stderrLines, [
            "bad.txt:5: unsupported scheme \"ftp\" (only http and https)",
            "bad.txt:6: not a URL: not a url at all",
            "bad.txt:9: out=../escape.bin would leave the output directory",
            "bad.txt:11: dir=/etc would leave the output directory",
            "bad.txt:13: invalid checksum \"sha-256=1234\" (expected md5=, sha-1=, sha-256= or sha-512= and hex digits)",
            "bad.txt:14: unknown option \"color\" (known: out, dir, checksum)",
            "bad.txt:16: dir=a/../../b would leave the output directory",
            "yxdownload: 7 invalid lines in bad.txt; nothing was downloaded.",
        ])
        XCTAssertEqual(server.requestCount, 0, "a bad list makes no request, not even for its good lines")
        XCTAssertEqual(files(), [])
    }

    func testBadLinesOnStandardInputAreReportedAsStdin() async throws {
        let output = try await yxdownload("-", stdin: "http://127.0.0.1:1/a\n  out=\n")
        XCTAssertEqual(output.status, 2)
        XCTAssertEqual(output.stderrLines.first, "<stdin>:2: out= is empty")
    }

    func testAnEmptyListIsNotAnError() async throws {
        try writeList("# nothing yet\n\n")
        let output = try await yxdownload("urls.txt")
        XCTAssertEqual(output.status, 0)
        XCTAssertTrue(output.stderr.contains("urls.txt has no URLs; nothing to do."), output.stderr)
        XCTAssertTrue(output.stderr.contains("0 done, 0 skipped, 0 failed"), output.stderr)
    }
}
