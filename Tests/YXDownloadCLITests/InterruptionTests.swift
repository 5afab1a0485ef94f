import Foundation
import XCTest
import YXTestServer

@testable import YXDownloadCLI

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

    /// A second run of the same list while the first still downloads into `movie.bin.part` leaves that
    /// `.part` alone and says why; the first finishes a whole file (found by a review: the second resumed
    /// the same `.part` and renamed it while the first still wrote into it).
    func testASecondRunLeavesAPartThatTheFirstStillWritesAlone() async throws {
        // 12 s for the first run: the second, a new process (slow to start under the thread sanitizer), must
        // find the `.part` still being written.
        let first = try await startSlowDownload(bytesPerSecond: 256 * 1024)
        let second = try await yxdownload("urls.txt")
        XCTAssertEqual(second.status, 1, second.stderr)
        XCTAssertTrue(
            second.stderr.contains(
                "fail  movie.bin  movie.bin.part is being written by another download of this file (another yxdownload "
                    + "run, or a worker sharing the folder), so it was left alone; once that one ended, run the same "
                    + "command again"), second.stderr)
        XCTAssertEqual(server.requests(to: "/movie.bin").count, 1, "the second run sent a request")
        await server.liftPace()
        let ended = await first.wait(timeout: 120)
        let output = try XCTUnwrap(ended, "the first run did not end")
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertTrue(holdsGenerated("movie.bin", size: size, seed: 21))
        XCTAssertEqual(files(), ["movie.bin"])
    }

    /// Downloads waiting in the queue when Ctrl-C comes never started: they count as not started.
    func testDownloadsThatWaitedInTheQueueCountAsNotStarted() async throws {
        for index in 0..<3 { serveGenerated("/q\(index).bin", size: size, seed: UInt64(index), bytesPerSecond: 256 * 1024) }
        try writeList((0..<3).map { "\(server.url("/q\($0).bin"))\n" }.joined())
        let command = try RunningCommand(["urls.txt", "-j", "1", "--json"], in: work)
        try await waitUntil("part of the first file on disk") { fileSize("q0.bin.part") > 50_000 }
        command.send(SIGINT)
        let output = await command.wait()
        XCTAssertEqual(output.status, 130)
        XCTAssertTrue(output.stderr.contains("0 done, 0 skipped, 0 failed, 1 canceled"), output.stderr)
        XCTAssertTrue(output.stderr.contains("interrupted by SIGINT; 2 not started."), output.stderr)
        XCTAssertEqual(server.requests(to: "/q1.bin").count, 0)
        // The JSON summary says it too: a script must not read it as a complete run.
        let summary = output.stdoutLines.last.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        XCTAssertEqual(summary?["event"] as? String, "summary", output.stdout)
        XCTAssertEqual(summary?["interrupted"] as? String, "SIGINT", output.stdout)
        XCTAssertEqual(summary?["canceled"] as? Int, 1, output.stdout)
        XCTAssertEqual(summary?["not_started"] as? Int, 2, output.stdout)
    }

    /// A list that changes under a run (read again for its downloads: it is longer than the run keeps
    /// in memory) ends the run with exit 1, and the summary says why and how many entries it left, on
    /// standard error and in `--json`'s summary (found by a review: only what ran was counted, and the
    /// JSON summary read like a complete run).
    func testAListThatChangesDuringTheRunEndsItAndCountsWhatItLeft() async throws {
        let count = InputList.retainedEntriesLimit + 100
        serveGenerated("/slow.bin", size: 600_000, seed: 31, bytesPerSecond: 128 * 1024)  // 4.6 s to change the list in
        serveGenerated("/next.bin", size: 1_000, seed: 32)
        serveGenerated("/third.bin", size: 1_000, seed: 33)
        // Every other entry is on disk already: skipped without a request.
        let kept = (3..<count).map { "f\($0).bin" }
        for name in kept { _ = FileManager.default.createFile(atPath: work.appendingPathComponent(name).path, contents: Data()) }
        let downloads = ["slow.bin", "next.bin", "third.bin"]
        try writeList((downloads + kept).map { "\(server.url("/\($0)"))" }.joined(separator: "\n") + "\n")
        // -j 1: the slow download holds the only slot, the next one waits for it (the run keeps one
        // waiting), and the run waits for room to add the third, having read the list's first 64 KiB.
        // (`--no-sync`: by default the run keeps room for a few more, whose files are flushed to disk.)
        let command = try RunningCommand(["urls.txt", "-j", "1", "--json", "--no-sync"], in: work)
        try await waitUntil("the first download to be under way") { fileSize("slow.bin.part") > 0 }
        let handle = try FileHandle(forWritingTo: work.appendingPathComponent("urls.txt"))
        try handle.truncate(atOffset: 100_000)
        try handle.close()
        // The list changed while the slow download ran: the rest of it at full speed.
        await server.liftPace()
        let output = await command.wait()
        XCTAssertEqual(output.status, 1, output.stderr)
        XCTAssertTrue(holdsGenerated("slow.bin", size: 600_000, seed: 31))
        XCTAssertTrue(holdsGenerated("next.bin", size: 1_000, seed: 32))
        XCTAssertTrue(holdsGenerated("third.bin", size: 1_000, seed: 33))

        let summary = try XCTUnwrap(output.stdoutLines.last.flatMap {
            try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        })
        XCTAssertEqual(summary["event"] as? String, "summary", output.stdout)
        XCTAssertEqual(summary["done"] as? Int, 3)
        XCTAssertEqual(summary["failed"] as? Int, 0)
        XCTAssertEqual(summary["canceled"] as? Int, 0)
        let skipped = try XCTUnwrap(summary["skipped"] as? Int)
        let notStarted = try XCTUnwrap(summary["not_started"] as? Int, output.stdout)
        XCTAssertGreaterThan(notStarted, 0)
        XCTAssertEqual(3 + skipped + notStarted, count, "every entry counted once: \(output.stdout)")
        let error = try XCTUnwrap(summary["error"] as? String, output.stdout)
        XCTAssertTrue(error.hasPrefix("the input list changed after it was checked ("), error)
        XCTAssertNil(summary["interrupted"])

        XCTAssertTrue(output.stderr.contains("yxdownload: 3 done, \(skipped) skipped, 0 failed, 0 canceled; "), output.stderr)
        XCTAssertTrue(
            output.stderr.hasSuffix("yxdownload: \(error); \(notStarted) not started: check the list, then run the same command again.\n"),
            output.stderr)
        XCTAssertEqual(output.stderr.components(separatedBy: "the input list changed").count - 1, 1, "said once: \(output.stderr)")
        XCTAssertEqual(server.requests(to: "/f3000.bin").count + server.requests(to: "/f\(count - 1).bin").count, 0)
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

    /// SIGHUP (the terminal went away) stops a run as SIGTERM does: `.part` kept, summary, 129.
    func testSIGHUPExits129AndKeepsThePart() async throws {
        serveGenerated("/movie.bin", size: size, seed: 21, bytesPerSecond: 512 * 1024)
        try writeList("\(server.url("/movie.bin"))\n")
        let command = try RunningCommand(["urls.txt", "--json"], in: work)
        try await waitUntil("part of the file on disk") { fileSize("movie.bin.part") > 100_000 }
        command.send(SIGHUP)
        let output = await command.wait()
        XCTAssertEqual(output.status, 129, output.stderr)
        XCTAssertTrue(output.stderr.contains("interrupted by SIGHUP"), output.stderr)
        XCTAssertEqual(output.stdoutLines.last.map { $0.contains("\"interrupted\":\"SIGHUP\"") }, true, output.stdout)
        XCTAssertGreaterThan(fileSize("movie.bin.part"), 100_000)
        XCTAssertFalse(files().contains("movie.bin"))
    }

    /// A second SIGHUP does not end a stop at once, as a second SIGINT or SIGTERM does: a terminal that
    /// goes away often sends two (found by a review: the run then exited without its summary).
    func testOnlyASecondSIGINTOrSIGTERMEscalates() {
        XCTAssertFalse(InterruptSignals.escalates(SIGHUP))
        XCTAssertTrue(InterruptSignals.escalates(SIGINT))
        XCTAssertTrue(InterruptSignals.escalates(SIGTERM))
    }

    /// Started with SIGHUP ignored (`nohup`, or a parent that ignores it), a run keeps ignoring it.
    func testSIGHUPIgnoredAtStartStaysIgnored() async throws {
        try await assertIgnoredAtStart(SIGHUP, "SIGHUP", trap: "HUP")
    }

    /// Started with SIGINT ignored (a background command of a script, which a Ctrl-C meant for the
    /// command in the foreground must not stop), a run keeps ignoring it.
    func testSIGINTIgnoredAtStartStaysIgnored() async throws {
        try await assertIgnoredAtStart(SIGINT, "SIGINT", trap: "INT")
    }

    /// Starts a slow download with `signal` ignored (`trap '' TRAP`), sends it `signal`, checks that the
    /// download goes on, then that SIGTERM still stops it (143, the `.part` kept).
    private func assertIgnoredAtStart(_ signal: Int32, _ name: String, trap: String) async throws {
        serveGenerated("/movie.bin", size: size, seed: 21, bytesPerSecond: 512 * 1024)
        try writeList("\(server.url("/movie.bin"))\n")
        let command = try RunningCommand(["urls.txt", "--json"], in: work, setup: "trap '' \(trap)")
        try await waitUntil("part of the file on disk") { fileSize("movie.bin.part") > 100_000 }
        command.send(signal)
        let after = fileSize("movie.bin.part")
        try await waitUntil("the download to go on after \(name)") { fileSize("movie.bin.part") > after + 300_000 }
        command.send(SIGTERM)
        let output = await command.wait()
        XCTAssertEqual(output.status, 143, output.stderr)
        XCTAssertFalse(output.stderr.contains(name), output.stderr)
        XCTAssertEqual(output.stdoutLines.last.map { $0.contains("\"interrupted\":\"SIGTERM\"") }, true, output.stdout)
        XCTAssertGreaterThan(fileSize("movie.bin.part"), after)
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
