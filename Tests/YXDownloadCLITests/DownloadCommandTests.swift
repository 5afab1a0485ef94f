import Foundation
import XCTest
import YXTestServer

#if canImport(Glibc)
import Glibc
#endif

/// `yxdownload` against the loopback server: files, names, output modes and options.
final class DownloadCommandTests: CLITestCase {
    func testDownloadsPrintsOneLinePerFileAndARerunSkipsWithoutRequests() async throws {
        serveGenerated("/one.bin", size: 300_000, seed: 1)
        serveGenerated("/two.bin", size: 70_000, seed: 2)
        try writeList("\(server.url("/one.bin"))\n\(server.url("/two.bin"))\n")

        let first = try await yxdownload("urls.txt", "-d", "out")
        XCTAssertEqual(first.status, 0, first.stderr)
        XCTAssertEqual(files(), ["out/one.bin", "out/two.bin"])
        XCTAssertTrue(holdsGenerated("out/one.bin", size: 300_000, seed: 1))
        XCTAssertTrue(holdsGenerated("out/two.bin", size: 70_000, seed: 2))
        XCTAssertEqual(first.stdoutLines.count, 2)
        XCTAssertTrue(first.stdoutLines.contains { $0.hasPrefix("done  out/one.bin  293.0 KiB in ") }, first.stdout)
        XCTAssertFalse(first.stdout.contains("\u{1B}"), "no escape codes when stdout is not a terminal")
        XCTAssertTrue(first.stderr.hasPrefix("yxdownload: 2 done, 0 skipped, 0 failed; 361.3 KiB in "), first.stderr)

        server.resetCounters()
        let second = try await yxdownload("urls.txt", "-d", "out")
        XCTAssertEqual(second.status, 0)
        XCTAssertEqual(server.requestCount, 0, "complete files are skipped without a request")
        XCTAssertEqual(second.stdoutLines, [
            "skip  out/one.bin  exists (--overwrite replaces it)", "skip  out/two.bin  exists (--overwrite replaces it)",
        ])
        XCTAssertTrue(second.stderr.hasPrefix("yxdownload: 0 done, 2 skipped, 0 failed"), second.stderr)

        // --overwrite downloads again and replaces the file.
        try Data("stale".utf8).write(to: work.appendingPathComponent("out/two.bin"))
        let third = try await yxdownload("urls.txt", "-d", "out", "--overwrite")
        XCTAssertEqual(third.status, 0)
        XCTAssertEqual(server.requests(to: "/two.bin").count, 1)
        XCTAssertTrue(holdsGenerated("out/two.bin", size: 70_000, seed: 2))
        XCTAssertEqual(files(), ["out/one.bin", "out/two.bin"])
    }

    func testStandardInputIsAList() async throws {
        serveGenerated("/in.bin", size: 5000, seed: 3)
        let output = try await yxdownload("-", stdin: "\(server.url("/in.bin"))\n  out=from-stdin.bin\n")
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertEqual(files(), ["from-stdin.bin"])
        XCTAssertTrue(holdsGenerated("from-stdin.bin", size: 5000, seed: 3))
    }

    func testCollisionsOutAndDirAndNamesFromTheURL() async throws {
        serveGenerated("/same.bin", size: 1000, seed: 4)
        serveGenerated("/a%20b.bin", size: 1001, seed: 5)
        serveGenerated("/%E6%97%A5%E6%9C%AC%E8%AA%9E.txt", size: 1002, seed: 6)
        serveGenerated("/x%2Fy%5Cz", size: 1003, seed: 7)
        serveGenerated("/dir/", size: 1004, seed: 8)
        serveGenerated("/q.bin", size: 1005, seed: 9)
        let base = server.baseURL.absoluteString.hasSuffix("/")
            ? String(server.baseURL.absoluteString.dropLast()) : server.baseURL.absoluteString
        try writeList("""
            \(base)/same.bin
            \(base)/same.bin
            \(base)/q.bin
              out=same.bin
            \(base)/same.bin
              dir=nested/deeper
            \(base)/a%20b.bin
            \(base)/%E6%97%A5%E6%9C%AC%E8%AA%9E.txt
            \(base)/x%2Fy%5Cz
            \(base)/dir/
            \(base)/q.bin?version=2&x=/etc/passwd
            \(base)/q.bin
              out=renamed/with slash.bin
            """)
        let output = try await yxdownload("urls.txt", "-d", "dl", "-j", "3")
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertEqual(files(), [
            "dl/a b.bin", "dl/index.html", "dl/nested/deeper/same.bin", "dl/q.bin", "dl/renamed_with slash.bin",
            "dl/same.bin", "dl/same.bin.1", "dl/same.bin.2", "dl/x_y_z", "dl/日本語.txt",
        ], output.stdout)
        XCTAssertTrue(holdsGenerated("dl/same.bin", size: 1000, seed: 4))
        XCTAssertTrue(holdsGenerated("dl/same.bin.1", size: 1000, seed: 4))
        XCTAssertTrue(holdsGenerated("dl/same.bin.2", size: 1005, seed: 9), "out=same.bin came third: same.bin.2")
        XCTAssertTrue(holdsGenerated("dl/日本語.txt", size: 1002, seed: 6))
        XCTAssertTrue(holdsGenerated("dl/x_y_z", size: 1003, seed: 7))
        XCTAssertTrue(holdsGenerated("dl/index.html", size: 1004, seed: 8))
        XCTAssertEqual(server.requests(to: "/q.bin").first { $0.query != nil }?.query, "version=2&x=/etc/passwd")

        // Run again: every name is claimed in the same order, so everything is skipped.
        server.resetCounters()
        let again = try await yxdownload("urls.txt", "-d", "dl")
        XCTAssertEqual(again.status, 0)
        XCTAssertEqual(server.requestCount, 0)
        XCTAssertTrue(again.stderr.hasPrefix("yxdownload: 0 done, 10 skipped, 0 failed"), again.stderr)
    }

    /// Found by a user test: a list whose `dir=` goes through an earlier entry's file downloaded that
    /// entry whole, then failed it, in every run. Now it fails at once, with no request; the other way
    /// round, a file named after an earlier entry's folder gets `NAME.1`.
    func testAFolderNamedLikeAFileOfTheSameList() async throws {
        serveGenerated("/m1", size: 3000, seed: 21)
        serveGenerated("/m2", size: 100, seed: 22)
        let fileEntry = "\(server.url("/m1"))\n  out=conf\n"
        let folderEntry = "\(server.url("/m2"))\n  dir=conf\n"
        try writeList(fileEntry + folderEntry)
        let output = try await yxdownload("urls.txt", "-d", "a")
        XCTAssertEqual(output.status, 1, output.stderr)
        XCTAssertTrue(output.stderr.contains("a/conf is the file of an earlier download"), output.stderr)
        XCTAssertEqual(files(), ["a/conf"], output.stdout)
        XCTAssertTrue(holdsGenerated("a/conf", size: 3000, seed: 21))
        XCTAssertEqual(server.requests(to: "/m2").count, 0, "refused before any request")

        try writeList(folderEntry + fileEntry)
        let reversed = try await yxdownload("urls.txt", "-d", "b")
        XCTAssertEqual(reversed.status, 0, reversed.stderr)
        XCTAssertEqual(files().filter { $0.hasPrefix("b/") }, ["b/conf.1", "b/conf/m2"], reversed.stdout)
        XCTAssertTrue(holdsGenerated("b/conf.1", size: 3000, seed: 21))
    }

    func testJSONLinesParseAndTheSummaryCounts() async throws {
        serveGenerated("/j1.bin", size: 40_000, seed: 11)
        serveGenerated("/j2.bin", size: 50_000, seed: 12)
        serveGenerated("/j3.bin", size: 60_000, seed: 13)
        server.serve("/gone.bin", .status(404))
        try FileManager.default.createDirectory(at: work.appendingPathComponent("o"), withIntermediateDirectories: true)
        try Data("already".utf8).write(to: work.appendingPathComponent("o/j3.bin"))
        let user = server.url("/j1.bin").absoluteString.replacingOccurrences(of: "http://", with: "http://alice:secret@")
        try writeList("\(user)\n\(server.url("/j2.bin"))\n\(server.url("/j3.bin"))\n\(server.url("/gone.bin"))\n")

        let output = try await yxdownload("urls.txt", "--json", "-d", "o", "-j", "1")
        XCTAssertEqual(output.status, 1, "one download failed")
        XCTAssertFalse(output.stdout.contains("secret"), "credentials never appear")
        XCTAssertFalse(output.stderr.contains("secret"))
        let events = try output.stdoutLines.map { line -> [String: Any] in
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
            return try XCTUnwrap(object as? [String: Any], line)
        }
        let kinds = events.compactMap { $0["event"] as? String }.filter { $0 != "progress" }
        // -j 1 transfers one at a time (a finished one is flushed while the next one begins); an existing
        // file is reported as soon as its line is read.
        XCTAssertEqual(kinds.filter { $0 == "start" }.count, 3, "\(kinds)")
        XCTAssertEqual(kinds.filter { $0 == "finish" }.count, 2, "\(kinds)")
        XCTAssertEqual(kinds.filter { $0 == "fail" }.count, 1, "\(kinds)")
        XCTAssertEqual(kinds.last, "summary", "\(kinds)")
        XCTAssertEqual(kinds.filter { $0 == "skip" }.count, 1)
        // j1's finish: downloads end in any order (each is hashed and flushed while the next transfers).
        let finish = try XCTUnwrap(events.first { $0["event"] as? String == "finish" && $0["file"] as? String == "o/j1.bin" })
        XCTAssertEqual(finish["url"] as? String, server.url("/j1.bin").absoluteString, "the user name and password are removed")
        XCTAssertEqual(finish["file"] as? String, "o/j1.bin")
        XCTAssertEqual(finish["bytes"] as? Int, 40_000)
        XCTAssertEqual(finish["sha256"] as? String, GeneratedContent.sha256(size: 40_000, seed: 11))
        let skip = try XCTUnwrap(events.first { $0["event"] as? String == "skip" })
        XCTAssertEqual(skip["file"] as? String, "o/j3.bin")
        XCTAssertEqual(skip["reason"] as? String, "exists")
        let fail = try XCTUnwrap(events.first { $0["event"] as? String == "fail" })
        XCTAssertEqual(fail["http_status"] as? Int, 404)
        XCTAssertEqual(fail["error"] as? String, "HTTP 404 Not Found: the server has no file at this URL; check the URL")
        XCTAssertEqual(fail["file"] as? String, "o/gone.bin")
        let summary = try XCTUnwrap(events.last)
        XCTAssertEqual(summary["done"] as? Int, 2)
        XCTAssertEqual(summary["skipped"] as? Int, 1)
        XCTAssertEqual(summary["failed"] as? Int, 1)
        XCTAssertEqual(summary["bytes"] as? Int, 90_000)
        XCTAssertNotNil(summary["seconds"] as? Double)
        XCTAssertEqual(files(in: "o"), ["j1.bin", "j2.bin", "j3.bin"], "a 404 leaves no file and no empty .part")
        XCTAssertTrue(output.stderr.contains("2 done, 1 skipped, 1 failed"), output.stderr)
    }

    func testQuietPrintsOnlyErrorsAndTheSummary() async throws {
        serveGenerated("/fine.bin", size: 1000, seed: 14)
        server.serve("/broken.bin", .status(410))
        try writeList("\(server.url("/fine.bin"))\n\(server.url("/broken.bin"))\n")
        let output = try await yxdownload("urls.txt", "-q")
        XCTAssertEqual(output.status, 1)
        XCTAssertEqual(output.stdout, "")
        XCTAssertEqual(output.stderrLines.count, 2, output.stderr)
        XCTAssertEqual(
            output.stderrLines.first, "fail  broken.bin  HTTP 410 Gone: the server removed this file; check the URL (\(server.url("/broken.bin")))")
        XCTAssertTrue(output.stderrLines.last?.hasPrefix("yxdownload: 1 done, 0 skipped, 1 failed") ?? false)
    }

    func testNoSyncStillRenamesOnlyWholeFiles() async throws {
        for index in 0..<20 { serveGenerated("/f\(index).bin", size: Int64(10_000 + index), seed: UInt64(30 + index)) }
        server.serve("/short.bin", Resource(.generated(size: 2_000, seed: 29), failures: [.dropAfter(bytes: 500)]))
        try writeList((0..<20).map { "\(server.url("/f\($0).bin"))\n" }.joined() + "\(server.url("/short.bin"))\n")
        let output = try await yxdownload("urls.txt", "--no-sync", "--retries", "0", "-j", "8")
        XCTAssertEqual(output.status, 1, output.stderr)
        for index in 0..<20 {
            XCTAssertTrue(holdsGenerated("f\(index).bin", size: Int64(10_000 + index), seed: UInt64(30 + index)))
        }
        XCTAssertFalse(files().contains("short.bin"), "a cut body never gets the final name")
        XCTAssertEqual(fileSize("short.bin.part"), 500)
    }

    func testHeadersUserAgentAndConnectionsReachTheServer() async throws {
        serveGenerated("/big.bin", size: 4 << 20, seed: 15)
        try writeList("\(server.url("/big.bin"))\n")
        let output = try await yxdownload(
            "urls.txt", "-H", "X-Token: abc", "--header", "Accept-Language: fr", "-U", "tester/2", "-x", "4")
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertTrue(holdsGenerated("big.bin", size: 4 << 20, seed: 15))
        let requests = server.requests(to: "/big.bin")
        XCTAssertTrue(requests.allSatisfy { $0.header("X-Token") == "abc" && $0.header("Accept-Language") == "fr" })
        XCTAssertTrue(requests.allSatisfy { $0.header("User-Agent") == "tester/2" })
        let ranges = requests.compactMap { $0.header("Range") }.filter { $0 != "bytes=0-0" }
        XCTAssertEqual(ranges.count, 4, "-x 4 fetches four ranges: \(ranges)")

        let plain = try await yxdownload("urls.txt", "--overwrite")
        XCTAssertEqual(plain.status, 0)
        XCTAssertEqual(server.requests(to: "/big.bin").last?.header("User-Agent"), "yxdownload/1.0.0")
    }

    func testRetriesRetryWaitAndTimeout() async throws {
        server.serve("/flaky.bin", Resource(.generated(size: 1000, seed: 16), failures: [.status(503), .status(503)]))
        try writeList("\(server.url("/flaky.bin"))\n", name: "flaky.txt")
        let none = try await yxdownload("flaky.txt", "--retries", "0")
        XCTAssertEqual(none.status, 1)
        XCTAssertTrue(none.stderr.contains("fail  flaky.bin  HTTP 503"), none.stderr)
        XCTAssertEqual(server.requests(to: "/flaky.bin").count, 1, "--retries 0: one attempt")

        server.serve("/flaky.bin", Resource(.generated(size: 1000, seed: 16), failures: [.status(503), .status(503)]))
        server.resetCounters()
        let some = try await yxdownload("flaky.txt", "--retries", "2", "--retry-wait", "0.05")
        XCTAssertEqual(some.status, 0, some.stderr)
        XCTAssertEqual(server.requests(to: "/flaky.bin").count, 3)
        XCTAssertTrue(holdsGenerated("flaky.bin", size: 1000, seed: 16))

        server.serve("/stalls.bin", Resource(.generated(size: 100_000, seed: 17), failures: [.stall(afterBytes: 1000, seconds: 30)]))
        try writeList("\(server.url("/stalls.bin"))\n", name: "stall.txt")
        let stalled = try await yxdownload("stall.txt", "--timeout", "1.5", "--retries", "0")
        XCTAssertEqual(stalled.status, 1)
        XCTAssertTrue(stalled.stderr.contains("no data for 1.5 s"), "the timeout as given: \(stalled.stderr)")
        // Measured from the launch of the process, start-up included (slow under the thread sanitizer).
        XCTAssertLessThan(stalled.seconds, 25, "--timeout 1.5 gives up long before the 30 s stall ends")
        XCTAssertTrue(files().contains("stalls.bin.part"), "the bytes received so far are kept")
    }

    func testConnectTimeoutEndsAHandshakeThatNeverCompletes() async throws {
        // A socket that listens but never answers: TCP connects (the kernel's backlog), TLS never does.
        let (listener, port) = try loopbackSocket()
        defer { close(listener) }
        XCTAssertEqual(listen(listener, 8), 0)
        try writeList("https://127.0.0.1:\(port)/never.bin\n")
        let output = try await yxdownload("urls.txt", "--connect-timeout", "1", "--timeout", "60", "--retries", "0")
        XCTAssertEqual(output.status, 1)
        XCTAssertTrue(output.stderr.contains("fail  never.bin"), output.stderr)
        // Measured from the launch of the process, start-up included (slow under the thread sanitizer).
        XCTAssertLessThan(output.seconds, 45, "the 1 s connect timeout ended it, not the 60 s stall timeout")
    }

    func testMaxSpeedRoughlyHoldsAndIsSharedFairly() async throws {
        for index in 0..<3 { serveGenerated("/slow\(index).bin", size: 512 << 10, seed: UInt64(30 + index)) }
        try writeList((0..<3).map { "\(server.url("/slow\($0).bin"))\n" }.joined())
        let output = try await yxdownload("urls.txt", "--max-speed", "200K", "-j", "3", "--json")
        XCTAssertEqual(output.status, 0, output.stderr)
        for index in 0..<3 { XCTAssertTrue(holdsGenerated("slow\(index).bin", size: 512 << 10, seed: UInt64(30 + index))) }
        // 1.5 MiB at 200 KiB/s is 7.7 s; allow a burst at the start.
        XCTAssertGreaterThan(output.seconds, 4.5, "--max-speed 200K held the transfers back")
        // The limit is shared: every download has bytes before the first one finishes (a transfer that
        // waited behind a paused one was a bug: curl's PIPEWAIT over plain http). Progress lines come once
        // a second; at 200K the downloads take about 7 s each, so one that starts a second or two late on
        // a loaded machine still shows progress before the first finishes.
        let lines = output.stdoutLines
        let firstFinish = try XCTUnwrap(lines.firstIndex { $0.contains("\"event\":\"finish\"") })
        for index in 0..<3 {
            XCTAssertTrue(
                lines[..<firstFinish].contains { $0.contains("slow\(index).bin") && $0.contains("\"progress\"") && !$0.contains("\"bytes\":0,") },
                "slow\(index).bin made progress while the others ran:\n\(output.stdout)")
        }
    }

    func testInsecureIsNeededForASelfSignedCertificate() async throws {
        let https = try HTTPSFixture(directory: root)
        defer { https.stop() }
        try Data(repeating: 7, count: 20_000).write(to: https.root.appendingPathComponent("tls.bin"))
        try writeList("https://127.0.0.1:\(https.port)/tls.bin\n")
        let verified = try await yxdownload("urls.txt", "--retries", "0")
        XCTAssertEqual(verified.status, 1, "TLS is verified by default")
        XCTAssertFalse(files().contains("tls.bin"))
        let insecure = try await yxdownload("urls.txt", "-k")
        XCTAssertEqual(insecure.status, 0, insecure.stderr)
        XCTAssertEqual(try Data(contentsOf: work.appendingPathComponent("tls.bin")), Data(repeating: 7, count: 20_000))
    }
}
