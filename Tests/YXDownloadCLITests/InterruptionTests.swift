import Foundation
import XCTest
import YXTestServer

/// Signals and crashes mid-download: `.part` files survive and the same command finishes the job.
final class InterruptionTests: CLITestCase {
    let size: Int64 = 3 << 20

    /// Starts a throttled download and waits until part of it is on disk.
    /// (The server's limit is per connection: with `-x 3` the download is three times faster.)
    private func startSlowDownload(_ extra: [String] = [], bytesPerSecond: Int = 512 * 1024) async throws -> RunningCommand {
        serveGenerated("/movie.bin", size: size, seed: 21, bytesPerSecond: bytesPerSecond)
        try writeList("\(server.url("/movie.bin"))\n")
        let command = try RunningCommand(["urls.txt"] + extra, in: work)
        try await waitUntil("part of the file on disk") { fileSize("movie.bin.part") > 100_000 }
        return command
    }

    private func rerunAtFullSpeed() async throws -> CommandOutput {
        serveGenerated("/movie.bin", size: size, seed: 21)
        server.resetCounters()
        return try await yxdownload("urls.txt")
    }

    func testSIGINTExits130PromptlyKeepsThePartAndARerunResumes() async throws {
        let command = try await startSlowDownload()
        let sent = Date()
        command.send(SIGINT)
        let output = await command.wait()
        XCTAssertEqual(output.status, 130)
        XCTAssertLessThan(Date().timeIntervalSince(sent), 10, "Ctrl-C ends the run promptly (generous on a loaded machine)")
        XCTAssertTrue(output.stderr.contains("interrupted by SIGINT"), output.stderr)
        XCTAssertTrue(output.stderr.contains("0 done, 0 skipped, 0 failed, 1 canceled"), output.stderr)
        let kept = fileSize("movie.bin.part")
        XCTAssertGreaterThan(kept, 100_000)
        XCTAssertFalse(files().contains("movie.bin"))

        let rerun = try await rerunAtFullSpeed()
        XCTAssertEqual(rerun.status, 0, rerun.stderr)
        XCTAssertTrue(holdsGenerated("movie.bin", size: size, seed: 21))
        XCTAssertEqual(files(), ["movie.bin"])
        let range = server.requests(to: "/movie.bin").last?.header("Range")
        XCTAssertNotNil(range)
        XCTAssertNotEqual(range, "bytes=0-", "the rerun resumed instead of starting over")
    }

    /// Downloads waiting in the queue when Ctrl-C comes never started: they count as not started.
    func testDownloadsThatWaitedInTheQueueCountAsNotStarted() async throws {
        for index in 0..<3 { serveGenerated("/q\(index).bin", size: size, seed: UInt64(index), bytesPerSecond: 256 * 1024) }
        try writeList((0..<3).map { "\(server.url("/q\($0).bin"))\n" }.joined())
        let command = try RunningCommand(["urls.txt", "-j", "1"], in: work)
        try await waitUntil("part of the first file on disk") { fileSize("q0.bin.part") > 50_000 }
        command.send(SIGINT)
        let output = await command.wait()
        XCTAssertEqual(output.status, 130)
        XCTAssertTrue(output.stderr.contains("0 done, 0 skipped, 0 failed, 1 canceled"), output.stderr)
        XCTAssertTrue(output.stderr.contains("interrupted by SIGINT; 2 not started."), output.stderr)
        XCTAssertEqual(server.requests(to: "/q1.bin").count, 0)
    }

    func testSIGTERMExits143() async throws {
        let command = try await startSlowDownload(["--json"])
        command.send(SIGTERM)
        let output = await command.wait()
        XCTAssertEqual(output.status, 143)
        XCTAssertTrue(output.stderr.contains("interrupted by SIGTERM"), output.stderr)
        XCTAssertEqual(output.stdoutLines.last.map { $0.hasPrefix("{\"event\":\"summary\",\"done\":0,") }, true)
        XCTAssertGreaterThan(fileSize("movie.bin.part"), 100_000)
    }

    func testKillNineThenARerunCompletesWithTheRightBytes() async throws {
        // 3 MiB over three connections of 100 KiB/s: about 10 s, so that a loaded machine still kills it
        // before it ends.
        let command = try await startSlowDownload(["-x", "3"], bytesPerSecond: 100 * 1024)
        // The sidecar exists from the start (a large file); wait until it records progress.
        try await waitUntil("the sidecar recording progress") { sidecarDoneBytes("movie.bin.part.meta") > 0 }
        command.send(SIGKILL)
        let output = await command.wait()
        XCTAssertEqual(output.status, 128 + SIGKILL)
        XCTAssertFalse(files().contains("movie.bin"))

        let rerun = try await rerunAtFullSpeed()
        XCTAssertEqual(rerun.status, 0, rerun.stderr)
        XCTAssertTrue(holdsGenerated("movie.bin", size: size, seed: 21), "every byte right after a kill -9")
        XCTAssertEqual(files(), ["movie.bin"])
    }

    /// The bytes the sidecar counts as done, over all segments (0 while it is missing or unreadable).
    private func sidecarDoneBytes(_ relative: String) -> Int64 {
        guard let data = try? Data(contentsOf: work.appendingPathComponent(relative)),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let segments = object["segments"] as? [[String: Any]]
        else { return 0 }
        return segments.reduce(0) { $0 + ((($1["done"] as? NSNumber)?.int64Value) ?? 0) }
    }
}
