import Foundation
import XCTest
import YXTestServer

/// `-v` and `-vv`: diagnostic lines on standard error, never on standard output, never with credentials,
/// and each failure printed once.
final class VerboseTests: CLITestCase {
    private func logLines(_ output: CommandOutput) -> [String] {
        output.stderrLines.filter { $0.hasPrefix("yxdownload: [") }
    }

    func testRequestsStatusesRetriesResumesAndRenames() async throws {
        let size: Int64 = 300_000
        server.serve("/r.bin", Resource(.generated(size: size, seed: 1), etag: "\"v1\"", failures: [.dropAfter(bytes: 100_000)]))
        try writeList("\(server.url("/r.bin"))\n")
        let cut = try await yxdownload("urls.txt", "--retries", "0")
        XCTAssertEqual(cut.status, 1, cut.stderr)

        server.serve("/r.bin", Resource(.generated(size: size, seed: 1), etag: "\"v1\"", failures: [.status(503)]))
        let url = server.url("/r.bin").absoluteString
        let output = try await yxdownload("urls.txt", "-v", "--retry-wait", "0.05")
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertTrue(holdsGenerated("r.bin", size: size, seed: 1))
        let lines = logLines(output)
        let expected = [
            "yxdownload: [info] resuming \(url) bytes=100000 file=\(work.path)/r.bin.part",
            "yxdownload: [trace] request \(url) if-range=\"v1\" range=100000- step=probe",
            "yxdownload: [trace] response \(url) length=24 status=503 step=probe",
        ]
        XCTAssertEqual(Array(lines.prefix(3)), expected, output.stderr)
        XCTAssertTrue(
            lines.contains {
                $0.hasPrefix("yxdownload: [info] retrying \(url) delay=0.0") && $0.hasSuffix(" error=\"HTTP 503\" retry=\"1 of 5\" step=probe")
            },
            output.stderr)
        XCTAssertTrue(lines.contains("yxdownload: [trace] response \(url) content-range=\"bytes 100000-299999/300000\" length=200000 status=206 step=probe"), output.stderr)
        XCTAssertEqual(lines.last, "yxdownload: [debug] renamed \(url) from=\(work.path)/r.bin.part to=\(work.path)/r.bin")
        XCTAssertTrue(output.stdout.hasPrefix("done  r.bin  293.0 KiB in "), "the usual output goes on: \(output.stdout)")

        let quiet = try await yxdownload("urls.txt", "--overwrite")
        XCTAssertEqual(logLines(quiet), [], "no log lines without -v")
    }

    /// A part whose range the server answers with the whole file says so at -v: it reads more than its range.
    func testAPartGivenTheWholeFileIsSaid() async throws {
        let size: Int64 = 4 << 20  // two parts of 2 MiB (a part is at least 1 MiB)
        serveGenerated("/w.bin", size: size, seed: 3, failures: [.stall(afterBytes: 0, seconds: 0), .ignoredRange, .ignoredRange])
        let url = server.url("/w.bin").absoluteString
        let output = try await yxdownload(url, "-v", "-x", "2", "--retries", "0")
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertTrue(holdsGenerated("w.bin", size: size, seed: 3))
        let said = logLines(output).filter { $0.contains("the server sent the whole file for a part's range") }
        XCTAssertEqual(
            said.sorted(),
            [
                "yxdownload: [info] the server sent the whole file for a part's range; reading up to the part's end \(url) part=0 skipped=0",
                "yxdownload: [info] the server sent the whole file for a part's range; reading up to the part's end \(url) part=1 skipped=2097152",
            ], output.stderr)
    }

    /// -vv adds curl's own lines: connections made and reused, the request and response heads; with the
    /// values of Authorization and Cookie headers, and URL credentials, redacted.
    func testCurlDetailsWithoutCredentials() async throws {
        for name in ["a", "b", "c"] { serveGenerated("/\(name).bin", size: 2_000, seed: 2) }
        let user = server.url("/a.bin").absoluteString.replacingOccurrences(of: "http://", with: "http://alice:s3cret-pw@")
        // A relative redirect, which curl resolves against the URL with its credentials (and quotes in
        // its note), and a server's `Location` that holds credentials.
        server.serve("/moved/d.bin", .redirect(to: "../b.bin", status: 302))
        let relative = server.url("/moved/d.bin").absoluteString.replacingOccurrences(of: "http://", with: "http://bob:s3cret-2@")
        let leaking = server.url("/c.bin").absoluteString.replacingOccurrences(of: "http://", with: "http://zed:s3cret-3@")
        server.serve("/leak/e.bin", .redirect(to: leaking, status: 302))
        // The files one after the other: the engine's two lanes take turns, so a later file reuses the
        // first one's connection.
        let output = try await yxdownload(
            user, server.url("/b.bin").absoluteString, server.url("/c.bin").absoluteString, relative,
            server.url("/leak/e.bin").absoluteString, "-vv", "-j", "1",
            "-H", "Authorization: Bearer s3cret-token", "-H", "Cookie: session=s3cret-cookie",
            "-H", "X-Auth:alice@example.com:s3cret-4")
        XCTAssertEqual(output.status, 0, output.stderr)
        let lines = logLines(output).joined(separator: "\n")
        XCTAssertTrue(lines.contains("[trace] curl * Connected to 127.0.0.1"), lines)
        XCTAssertTrue(lines.contains("[trace] curl > GET /a.bin HTTP/1.1"), lines)
        XCTAssertTrue(lines.contains("[trace] curl < HTTP/1.1 200 OK"), lines)
        XCTAssertTrue(lines.lowercased().contains("re-using existing connection"), "a later file reused a connection: \(lines)")
        XCTAssertTrue(lines.contains("curl > Authorization: [redacted]"), lines)
        XCTAssertTrue(lines.contains("curl > Cookie: [redacted]"), lines)
        XCTAssertTrue(lines.contains("Issue another request to this URL: 'http://…@127.0.0.1:"), lines)
        XCTAssertTrue(lines.contains("curl < Location: http://…@127.0.0.1:"), lines)
        for secret in ["s3cret", "alice", "bob", "zed"] {
            XCTAssertFalse(output.stderr.contains(secret), "\(secret) in: \(output.stderr)")
            XCTAssertFalse(output.stdout.contains(secret))
        }
        XCTAssertEqual(server.requests(to: "/a.bin").first?.header("Cookie"), "session=s3cret-cookie", "sent, not shown")
    }

    /// With --json, standard output stays pure JSON; the log lines go to standard error.
    func testJSONOnStandardOutputIsUndisturbed() async throws {
        serveGenerated("/j.bin", size: 3_000, seed: 4)
        let output = try await yxdownload(server.url("/j.bin").absoluteString, "--json", "-vv")
        XCTAssertEqual(output.status, 0, output.stderr)
        for line in output.stdoutLines {
            XCTAssertNoThrow(try JSONSerialization.jsonObject(with: Data(line.utf8)), line)
        }
        XCTAssertEqual(output.stdoutLines.count, 3, "start, finish, summary: \(output.stdout)")
        XCTAssertFalse(logLines(output).isEmpty)
    }

    /// A failure is one line with what to do: not also the downloader's "download failed" warning, nor
    /// the dispatcher's "job failed".
    func testAFailureIsPrintedOnce() async throws {
        server.serve("/gone.bin", .status(404))
        let output = try await yxdownload(server.url("/gone.bin").absoluteString, "-v")
        XCTAssertEqual(output.status, 1)
        // The URL is left out before looking for "404": the server's random port may contain it.
        let url = server.url("/gone.bin").absoluteString
        let lines = output.stderrLines.map { $0.replacingOccurrences(of: url, with: "URL") }
        XCTAssertEqual(lines.filter { $0.contains("404") && !$0.contains("[trace] response") }, [
            "fail  gone.bin  HTTP 404 Not Found: the server has no file at this URL; check the URL (URL)"
        ])
        XCTAssertFalse(output.stderr.contains("failed url="), output.stderr)
        XCTAssertFalse(output.stderr.contains("job failed"), output.stderr)
    }
}
