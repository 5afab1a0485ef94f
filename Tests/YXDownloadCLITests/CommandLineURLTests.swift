import Foundation
import XCTest
import YXTestServer

/// URLs given on the command line: alone, with a list (`-i FILE`, or a lone list argument), from
/// standard input; one run, one summary, one exit status.
final class CommandLineURLTests: CLITestCase {
    func testURLsAloneDownloadIntoTheOutputDirectory() async throws {
        serveGenerated("/a.bin", size: 5_000, seed: 1)
        serveGenerated("/b.bin", size: 6_000, seed: 2)
        let output = try await yxdownload(server.url("/a.bin").absoluteString, server.url("/b.bin").absoluteString, "-d", "dl")
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertEqual(files(), ["dl/a.bin", "dl/b.bin"])
        XCTAssertTrue(holdsGenerated("dl/a.bin", size: 5_000, seed: 1))
        XCTAssertTrue(holdsGenerated("dl/b.bin", size: 6_000, seed: 2))
        XCTAssertTrue(output.stderr.hasPrefix("yxdownload: 2 done, 0 skipped, 0 failed"), output.stderr)
    }

    /// Arguments first, then the list; the same names and collision rules for both; one summary; one
    /// failure makes the exit status 1.
    func testURLsAndAListShareOneRun() async throws {
        serveGenerated("/same.bin", size: 1_000, seed: 3)
        serveGenerated("/other.bin", size: 2_000, seed: 4)
        server.serve("/gone.bin", .status(404))
        try writeList("\(server.url("/same.bin"))\n\(server.url("/gone.bin"))\n\(server.url("/other.bin"))\n  out=same.bin\n")
        let output = try await yxdownload(
            "-i", "urls.txt", server.url("/same.bin").absoluteString, "-j", "1", "--json")
        XCTAssertEqual(output.status, 1, output.stderr)
        let files = files()
        XCTAssertEqual(files, ["same.bin", "same.bin.1", "same.bin.2"], "one naming for all entries of the run")
        XCTAssertTrue(holdsGenerated("same.bin", size: 1_000, seed: 3), "the argument came first")
        XCTAssertTrue(holdsGenerated("same.bin.1", size: 1_000, seed: 3))
        XCTAssertTrue(holdsGenerated("same.bin.2", size: 2_000, seed: 4), "out=same.bin came third")
        let summaries = output.stdoutLines.filter { $0.contains("\"event\":\"summary\"") }
        XCTAssertEqual(summaries, [summaries.first].compactMap { $0 })
        XCTAssertTrue(summaries.first?.contains("\"done\":3,\"skipped\":0,\"failed\":1") ?? false, output.stdout)
        XCTAssertEqual(output.stderrLines.filter { $0.hasPrefix("yxdownload: ") }.count, 1, "one summary line")
    }

    func testALoneArgumentThatIsNotAURLIsTheList() async throws {
        serveGenerated("/l.bin", size: 1_500, seed: 5)
        try writeList("\(server.url("/l.bin"))\n", name: "my list")
        let output = try await yxdownload("my list")
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertEqual(files(), ["l.bin"])
    }

    func testDashIReadsStandardInputWithURLs() async throws {
        serveGenerated("/in.bin", size: 1_000, seed: 6)
        serveGenerated("/arg.bin", size: 1_000, seed: 7)
        let output = try await yxdownload("-i", "-", server.url("/arg.bin").absoluteString, stdin: "\(server.url("/in.bin"))\n")
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertEqual(files(), ["arg.bin", "in.bin"])
    }

    /// A bad URL argument is a usage error: exit 2, a message saying which, and no request at all, not
    /// even for the good arguments or the list.
    func testABadURLArgumentIsAUsageErrorAndNothingIsRequested() async throws {
        serveGenerated("/ok.bin", size: 100, seed: 8)
        let ok = server.url("/ok.bin").absoluteString
        try writeList("\(ok)\n")
        let cases: [([String], String)] = [
            ([ok, "ftp://example.com/a"], "Error: bad URL argument: unsupported scheme \"ftp\" (only http and https)"),
            ([ok, "http://"], "Error: bad URL argument: URL without a host: http://"),
            (["http:/a.bin"], "Error: bad URL argument: URL without a host: http:/a.bin"),
            ([ok, "urls.txt"], "Error: 'urls.txt' is not an http or https URL (give a list with -i urls.txt)"),
            (["-i", "urls.txt", "more.txt"], "Error: 'more.txt' is not an http or https URL (one list only: -i is given)"),
            (["https://exa mple.com/a"], "Error: bad URL argument: not a URL: https://exa mple.com/a"),
            (["-i", "urls.txt", "http://user:secret@/x"], "Error: bad URL argument: URL without a host: http://…@/x"),
            // A URL mistyped, its credentials still hidden.
            (["http//eve:secret@127.0.0.1/x", "b"], "Error: 'http//…@127.0.0.1/x' is not an http or https URL"),
        ]
        for ((arguments, message), output) in zip(cases, try await yxdownloadEach(cases.map(\.0))) {
            XCTAssertEqual(output.status, 2, "\(arguments): \(output.stderr)")
            XCTAssertTrue(output.stderr.hasPrefix(message), "\(arguments) → \(output.stderr)")
            XCTAssertTrue(output.stderr.contains("See 'yxdownload --help' for more information."), output.stderr)
            XCTAssertFalse(output.stderr.contains("secret"), "no credentials in messages: \(output.stderr)")
            XCTAssertEqual(output.stdout, "")
        }
        XCTAssertEqual(server.requestCount, 0)
        XCTAssertEqual(files(), [])
    }
}
