import Foundation
import XCTest
import YXTestServer

/// `-j N`: at most N downloads transfer at once, from a download's first request to its last byte,
/// retry waits included, even though more are submitted than run (they wait in the transfer queue, to
/// start on the thread that ends the last one). A download whose bytes are in then gives its place to
/// the next one while its file is verified, flushed to disk (by default) and renamed.
final class ConcurrencyLimitTests: CLITestCase {
    /// The JSON events, and the largest number of downloads between their `start` and their end.
    private func events(_ output: CommandOutput) throws -> (kinds: [String], mostAtOnce: Int) {
        var running = 0
        var most = 0
        var kinds: [String] = []
        for line in output.stdoutLines {
            let event = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let kind = try XCTUnwrap(event["event"] as? String)
            if kind == "progress" || kind == "skip" { continue }
            kinds.append(kind)
            if kind == "start" { running += 1 }
            if kind == "finish" || kind == "fail" { running -= 1 }
            most = max(most, running)
        }
        return (kinds, most)
    }

    /// Eight files of 60,000 bytes, each sent in 0.6 s (long enough to overlap however slowly the run starts
    /// them), listed in `urls.txt`.
    private func serveEightPacedFiles() throws {
        for index in 0..<8 { serveGenerated("/s\(index).bin", size: 60_000, seed: UInt64(index), bytesPerSecond: 100_000) }
        try writeList((0..<8).map { "\(server.url("/s\($0).bin"))\n" }.joined())
    }

    /// Paced responses (0.6 s each) overlap whenever transfers do: the server saw at most 3 at once.
    func testAtMostJDownloadsTransferAtOnce() async throws {
        try serveEightPacedFiles()
        let output = try await yxdownload("urls.txt", "-j", "3", "--json")
        XCTAssertEqual(output.status, 0, output.stderr)
        let (kinds, most) = try events(output)
        XCTAssertEqual(kinds.filter { $0 == "finish" }.count, 8)
        XCTAssertEqual(server.mostResponsesAtOnce, 3, "never more than -j 3 transfers, and -j 3 were used")
        // Downloads flushing to disk after their transfer: at most 3 per transfer slot.
        XCTAssertLessThanOrEqual(most, 3 + 9, "\(kinds)")
        for index in 0..<8 { XCTAssertTrue(holdsGenerated("s\(index).bin", size: 60_000, seed: UInt64(index))) }
    }

    /// With `--no-sync` too, a download whose bytes are in gives its place away before its rename (the
    /// next request leaves first): at most 3 transfers, and between start and end no more downloads than
    /// the list is read ahead by (2 × -j).
    func testWithoutTheFlushJBoundsTheTransfersAndTheReadAheadTheRest() async throws {
        try serveEightPacedFiles()
        let output = try await yxdownload("urls.txt", "-j", "3", "--json", "--no-sync")
        XCTAssertEqual(output.status, 0, output.stderr)
        let (kinds, most) = try events(output)
        XCTAssertEqual(kinds.filter { $0 == "finish" }.count, 8)
        XCTAssertEqual(server.mostResponsesAtOnce, 3, "never more than -j 3 transfers, and -j 3 were used")
        XCTAssertGreaterThanOrEqual(most, 3, "\(kinds)")
        XCTAssertLessThanOrEqual(most, 6, "\(kinds)")
        for index in 0..<8 { XCTAssertTrue(holdsGenerated("s\(index).bin", size: 60_000, seed: UInt64(index))) }
    }

    /// A download that must wait before its retry keeps its place: the next one does not start meanwhile.
    func testARetryWaitDoesNotLetAnotherDownloadStart() async throws {
        server.serve("/flaky.bin", Resource(.generated(size: 5_000, seed: 1), failures: [.status(503), .status(503)]))
        for index in 0..<3 { serveGenerated("/n\(index).bin", size: 5_000, seed: UInt64(10 + index)) }
        try writeList("\(server.url("/flaky.bin"))\n" + (0..<3).map { "\(server.url("/n\($0).bin"))\n" }.joined())
        let output = try await yxdownload("urls.txt", "-j", "1", "--json", "--retry-wait", "0.2")
        XCTAssertEqual(output.status, 0, output.stderr)
        let (kinds, _) = try events(output)
        XCTAssertEqual(kinds.filter { $0 == "start" }.count, 4, "\(kinds)")
        XCTAssertEqual(kinds.filter { $0 == "finish" }.count, 4, "\(kinds)")
        XCTAssertEqual(kinds.last, "summary")
        XCTAssertEqual(server.mostResponsesAtOnce, 1)
        let flaky = server.requests(to: "/flaky.bin").map(\.receivedAt)
        let next = try XCTUnwrap(server.requests(to: "/n0.bin").first?.receivedAt)
        XCTAssertEqual(flaky.count, 3)
        XCTAssertGreaterThan(next, flaky[2], "the next download's request came after the retried one's last")
    }

    func testSegmentedDownloadsKeepTheLimitToo() async throws {
        for index in 0..<4 { serveGenerated("/x\(index).bin", size: 3 << 20, seed: UInt64(20 + index)) }
        try writeList((0..<4).map { "\(server.url("/x\($0).bin"))\n" }.joined())
        let output = try await yxdownload("urls.txt", "-j", "1", "-x", "3", "--json")
        XCTAssertEqual(output.status, 0, output.stderr)
        let (kinds, most) = try events(output)
        XCTAssertEqual(most, 1, "\(kinds)")
        for index in 0..<4 { XCTAssertTrue(holdsGenerated("x\(index).bin", size: 3 << 20, seed: UInt64(20 + index))) }
    }
}
