import Foundation
import XCTest
import YXTestServer

@testable import YXDownloadCLI
@testable import YXDownloadQueueCLI
import YXDownload
import YXJobStore
import YXJobStoreSQLite
import YXTerminal

#if canImport(Glibc)
import Glibc
#endif

/// `yxdownload enqueue | worker | status` with the real binary, an SQLite store in a temp folder (and
/// PostgreSQL when `YXQUEUE_TEST_POSTGRES_URL` names one), a loopback server, and `kill -9`.
final class DurableCommandTests: CLITestCase {
    private struct Source {
        var name: String
        var size: Int64
        var seed: UInt64
    }

    /// The store, in the command's folder.
    private let queue = "jobs.sqlite"

    /// Serves `count` generated files (`f0.bin`, …) of the given sizes, at `bytesPerSecond` per
    /// connection when given; writes their list.
    @discardableResult
    private func serveFiles(
        _ count: Int, size: (Int) -> Int64, bytesPerSecond: Int? = nil, list: String = "urls.txt"
    ) throws -> [Source] {
        let sources = (0..<count).map { Source(name: "f\($0).bin", size: size($0), seed: UInt64(1000 + $0)) }
        for source in sources {
            serveGenerated("/\(source.name)", size: source.size, seed: source.seed, bytesPerSecond: bytesPerSecond)
        }
        try writeList(sources.map { server.url("/\($0.name)").absoluteString }.joined(separator: "\n") + "\n", name: list)
        return sources
    }

    private func assertAllWhole(_ sources: [Source], in folder: String, file: StaticString = #filePath, line: UInt = #line) {
        for source in sources {
            XCTAssertTrue(
                holdsGenerated("\(folder)/\(source.name)", size: source.size, seed: source.seed),
                "\(source.name) is not byte-identical", file: file, line: line)
        }
        let leftovers = files(in: folder).filter { $0.hasSuffix(".part") || $0.hasSuffix(".part.meta") }
        XCTAssertEqual(leftovers, [], "partial files left", file: file, line: line)
        XCTAssertEqual(files(in: folder).count, sources.count, file: file, line: line)
    }

    /// `status --json`, decoded.
    private func status(_ store: String? = nil) async throws -> [String: Any] {
        let output = try await yxdownload("status", "--queue", store ?? queue, "--json")
        XCTAssertEqual(output.status, 0, output.stderr)
        let object = try JSONSerialization.jsonObject(with: Data(output.stdout.utf8)) as? [String: Any]
        return try XCTUnwrap(object, output.stdout)
    }

    private func count(_ status: [String: Any], _ state: String) -> Int {
        let states = status["states"] as? [[String: Any]] ?? []
        return states.first { $0["state"] as? String == state }?["jobs"] as? Int ?? -1
    }

    private func startWorker(_ extra: String..., store: String? = nil) throws -> RunningCommand {
        try RunningCommand(["worker", "--queue", store ?? queue, "-d", "out", "--lease", "1"] + extra, in: work)
    }

    // MARK: - Enqueue and work

    func testEnqueueThenWorkerDownloadsEveryFileByteCorrect() async throws {
        let sources = try serveFiles(8, size: { Int64([1, 1000, 300_000, 1_500_000][$0 % 4] + $0) })
        let enqueue = try await yxdownload("enqueue", "--queue", queue, "-i", "urls.txt")
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)
        XCTAssertEqual(enqueue.stdout, "queued 8 downloads in jobs.sqlite: 8 new, 0 already queued\n")
        // A command that ends closes the store whole: its log is in the file, and nothing is left beside
        // it (the read-only connection closed last left the -wal and -shm files).
        let logs = { ["-wal", "-shm"].filter { FileManager.default.fileExists(atPath: self.work.appendingPathComponent(self.queue + $0).path) } }
        XCTAssertEqual(logs(), [])

        let worker = try await startWorker("--exit-when-empty", "-j", "3").wait(timeout: 120)
        let output = try XCTUnwrap(worker, "the worker did not exit")
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertEqual(logs(), [])
        XCTAssertEqual(output.stdoutLines.filter { $0.hasPrefix("done  out/") }.count, 8, output.stdout)
        XCTAssertTrue(output.stderr.contains("yxdownload: 8 done, 0 skipped, 0 failed"), output.stderr)
        assertAllWhole(sources, in: "out")

        let status = try await status()
        XCTAssertEqual(count(status, "succeeded"), 8)
        XCTAssertEqual(status["total"] as? Int, 8)
        let bytes = status["bytes"] as? [String: Any]
        XCTAssertEqual((bytes?["done"] as? NSNumber)?.int64Value, sources.reduce(0) { $0 + $1.size })
    }

    func testEnqueueTwiceDoesNotDownloadTwice() async throws {
        let sources = try serveFiles(5, size: { Int64(10_000 + $0) })
        let first = try await yxdownload("enqueue", "--queue", queue, "-i", "urls.txt")
        XCTAssertEqual(first.stdout, "queued 5 downloads in jobs.sqlite: 5 new, 0 already queued\n", first.stderr)
        let second = try await yxdownload("enqueue", "--queue", queue, "-i", "urls.txt")
        XCTAssertEqual(second.status, 0)
        XCTAssertEqual(second.stdout, "queued 5 downloads in jobs.sqlite: 0 new, 5 already queued\n", second.stderr)
        let total = try await status()["total"] as? Int
        XCTAssertEqual(total, 5)

        let finished = try await startWorker("--exit-when-empty").wait(timeout: 60)
        let output = try XCTUnwrap(finished)
        XCTAssertEqual(output.status, 0, output.stderr)
        assertAllWhole(sources, in: "out")
        for source in sources {
            XCTAssertEqual(server.requests(to: "/\(source.name)").count, 1, "\(source.name) was requested more than once")
        }

        // Once done, the same list again: new jobs (the old ones ended), but every file is skipped.
        let third = try await yxdownload("enqueue", "--queue", queue, "-i", "urls.txt")
        XCTAssertEqual(third.stdout, "queued 5 downloads in jobs.sqlite: 5 new, 0 already queued\n")
        let finishedAgain = try await startWorker("--exit-when-empty").wait(timeout: 60)
        let again = try XCTUnwrap(finishedAgain)
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertTrue(again.stderr.contains("0 done, 5 skipped, 0 failed"), again.stderr)
        for source in sources {
            XCTAssertEqual(server.requests(to: "/\(source.name)").count, 1, "\(source.name) was downloaded twice")
        }
    }

    /// An entry whose file is queued for another download (another URL, another checksum) would join that
    /// job and never be fetched: the enqueue says which and stores nothing. The same download again, with
    /// other options, still joins.
    func testEnqueueOfAnotherDownloadForAQueuedFileStoresNothing() async throws {
        let sources = try serveFiles(3, size: { Int64(10_000 + $0) })
        let first = try await yxdownload("enqueue", "--queue", queue, "-i", "urls.txt")
        XCTAssertEqual(first.status, 0, first.stderr)
        let mirror = server.url("/mirror/f1.bin").absoluteString.replacingOccurrences(of: "http://", with: "http://me:s3cret@")
        try writeList(
            "\(server.url("/new.bin"))\n\(mirror)\n\(server.url("/f2.bin"))\n  checksum=sha-256=\(String(repeating: "0", count: 64))\n",
            name: "other.txt")
        let conflicting = try await yxdownload("enqueue", "--queue", queue, "-i", "other.txt")
        XCTAssertEqual(conflicting.status, 1, conflicting.stderr)
        XCTAssertEqual(conflicting.stdout, "")
        XCTAssertTrue(
            conflicting.stderr.contains(
                "f1.bin is already queued (job 2) from \(server.url("/f1.bin")); this entry asks for \(server.url("/mirror/f1.bin"))\n"),
            conflicting.stderr)
        XCTAssertTrue(
            conflicting.stderr.contains("f2.bin is already queued (job 3) with no checksum; this entry gives checksum sha-256=000"),
            conflicting.stderr)
        XCTAssertTrue(
            conflicting.stderr.hasSuffix(
                "yxdownload: 2 entries name files already queued for another download; nothing was stored. Give them other "
                    + "names with out=NAME (or dir=).\n"), conflicting.stderr)
        XCTAssertFalse(conflicting.stderr.contains("s3cret"), conflicting.stderr)
        let total = try await status()["total"] as? Int
        XCTAssertEqual(total, 3, "new.bin was stored although the enqueue failed")

        let sameAgain = try await yxdownload("enqueue", "--queue", queue, "--retries", "2", "-H", "X-A: b", "-i", "urls.txt")
        XCTAssertEqual(sameAgain.status, 0, sameAgain.stderr)
        XCTAssertEqual(sameAgain.stdout, "queued 3 downloads in jobs.sqlite: 0 new, 3 already queued\n")
        // The same request written otherwise joins too (found by a review): host case, a fragment, an
        // empty query, a dot segment.
        let f0 = server.url("/f0.bin")
        let port = f0.port.map { ":\($0)" } ?? ""
        let same = try await yxdownload(
            "enqueue", "--queue", queue, "HTTP://LOCALHOST\(port)/f0.bin#part".replacingOccurrences(of: "LOCALHOST", with: f0.host ?? ""),
            "\(server.url("/x/../f1.bin"))?")
        XCTAssertEqual(same.status, 0, same.stderr)
        XCTAssertEqual(same.stdout, "queued 2 downloads in jobs.sqlite: 0 new, 2 already queued\n")
        // Only the credentials differ: said so, without them.
        let withCredentials = f0.absoluteString.replacingOccurrences(of: "http://", with: "http://me:s3cret@")
        let credentials = try await yxdownload("enqueue", "--queue", queue, withCredentials)
        XCTAssertEqual(credentials.status, 1, credentials.stderr)
        XCTAssertTrue(
            credentials.stderr.hasPrefix("yxdownload: f0.bin is already queued (job 1) from the same URL with other credentials (not shown)\n"),
            credentials.stderr)
        XCTAssertFalse(credentials.stderr.contains("s3cret"), credentials.stderr)
        let finished = try await startWorker("--exit-when-empty").wait(timeout: 60)
        XCTAssertEqual(try XCTUnwrap(finished).status, 0)
        assertAllWhole(sources, in: "out")
    }

    /// A list longer than a batch of jobs, and longer than the list that a download keeps from its check:
    /// read again as the store takes its jobs, a batch at a time, in one transaction. Names collide across
    /// batches and are numbered as a download run numbers them; per-host limits cover both hosts.
    func testLongListIsStoredWholeInBatches() async throws {
        let count = InputList.retainedEntriesLimit + 2 * EnqueueCommand.batchSize
        let hosts = [server.url("/").absoluteString, server.url("/").absoluteString.replacingOccurrences(of: "127.0.0.1", with: "localhost")]
        let lines = (0..<count).map { index in
            // Every fifth entry is named `same.bin`: its collisions span every batch.
            hosts[index % 2] + (index % 5 == 0 ? "a/same.bin" : "f\(index).bin")
        }
        try writeList(lines.joined(separator: "\n") + "\n")
        let enqueue = try await yxdownload("enqueue", "--queue", queue, "-i", "urls.txt", "--per-host", "3")
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)
        XCTAssertEqual(enqueue.stdout, "queued \(count) downloads in jobs.sqlite: \(count) new, 0 already queued\n")

        let store = try await SQLiteJobStore.open(path: work.appendingPathComponent(queue).path)
        var stored: [String] = []
        var after: JobID?
        while true {
            let page = try await store.jobs(JobQuery(after: after, limit: 1_000))
            guard let last = page.last else { break }
            stored += try page.map { try JSONDecoder().decode(StoredDownload.self, from: $0.payload).relativePath }
            after = last.id
        }
        let limits = try await store.concurrencyLimits()
        try await store.close()
        var names = OutputNames()
        let expected = lines.map { line in
            let name = String(line.split(separator: "/").last!)
            return names.claim(directory: [], name: name)
        }
        XCTAssertEqual(stored, expected, "the stored files, in list order")
        XCTAssertTrue(stored.contains("same.bin.\(count / 5 - 1)"), "the last collision's name")
        XCTAssertEqual(Set(limits.values), [3])
        XCTAssertEqual(limits.count, 2, "\(limits)")

        let again = try await yxdownload("enqueue", "--queue", queue, "-i", "urls.txt")
        XCTAssertEqual(again.stdout, "queued \(count) downloads in jobs.sqlite: 0 new, \(count) already queued\n", again.stderr)
    }

    /// An entry whose `dir=` goes through an earlier entry's file could never be downloaded: the enqueue
    /// says which and stores nothing (as a run refuses that entry, found by a user test).
    func testEnqueueOfAFolderNamedLikeAFileStoresNothing() async throws {
        try writeList("\(server.url("/m1"))\n  out=conf\n\(server.url("/m2"))\n  dir=conf\n")
        let output = try await yxdownload("enqueue", "--queue", queue, "-i", "urls.txt")
        XCTAssertEqual(output.status, 1, output.stderr)
        XCTAssertEqual(
            output.stderr,
            "yxdownload: \(server.url("/m2")): conf is the file of an earlier download of this list, so it cannot be a "
                + "folder too (dir=): give one of them another name (out= or dir=); nothing was stored.\n")
        let counts = try await status()
        XCTAssertEqual(counts["total"] as? Int, 0, "\(counts)")
    }

    /// A list that changes between its check and the read that stores it (here cut short while the store
    /// is locked by another process) stores nothing and says why (found by a helper's review: a cut-off
    /// URL was stored, exit 0).
    func testAListThatChangesAfterItsCheckStoresNothing() async throws {
        let count = InputList.retainedEntriesLimit + 100
        let lines = (0..<count).map { server.url("/f\($0).bin").absoluteString }
        try writeList(lines.joined(separator: "\n") + "\n")
        let first = try await yxdownload("enqueue", "--queue", queue, server.url("/first.bin").absoluteString)
        XCTAssertEqual(first.status, 0, first.stderr)
        let locker = try await lockStore()
        let enqueue = try RunningCommand(["enqueue", "--queue", queue, "-i", "urls.txt", "--per-host", "2"], in: work)
        // The list was checked once the store is open: then it is cut short, and the lock let go.
        let store = work.appendingPathComponent(queue).path
        try await waitUntil("enqueue to open the store") {
            let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(enqueue.pid)/fd")) ?? []
            return fds.contains { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(enqueue.pid)/fd/\($0)")) == store }
        }
        let handle = try FileHandle(forWritingTo: work.appendingPathComponent("urls.txt"))
        try handle.truncate(atOffset: 1_000)
        try handle.close()
        locker.send(SIGKILL)
        _ = await locker.wait()
        let output = await enqueue.wait()
        XCTAssertEqual(output.status, 1, output.stderr)
        XCTAssertTrue(output.stderr.contains("yxdownload: the input list changed after it was checked"), output.stderr)
        XCTAssertTrue(output.stderr.hasSuffix("; nothing was stored.\n"), output.stderr)
        let total = try await status()["total"] as? Int
        XCTAssertEqual(total, 1, "only the first enqueue's job")
        // Nor the per-host limit it set before the jobs (found by a helper's review).
        let opened = try await SQLiteJobStore.open(path: store)
        let limits = try await opened.concurrencyLimits()
        try await opened.close()
        XCTAssertEqual(limits, [:])
    }

    /// `status` reads a store while another process holds its write lock (a long enqueue holds it for
    /// seconds): opening a store at the latest schema writes nothing, so it does not wait for the lock and
    /// fail after the busy timeout.
    func testStatusReadsAStoreThatAnotherProcessIsWriting() async throws {
        let first = try await yxdownload("enqueue", "--queue", queue, server.url("/first.bin").absoluteString)
        XCTAssertEqual(first.status, 0, first.stderr)
        let locker = try await lockStore()
        let status = try await status()
        XCTAssertEqual(status["total"] as? Int, 1)
        locker.send(SIGKILL)
        _ = await locker.wait()
    }

    /// An empty list (here on standard input) is nothing to do: said once, exit 0, and no store is made.
    func testAnEmptyListMakesNoStore() async throws {
        let output = try await yxdownload("enqueue", "--queue", queue, "-i", "-", stdin: "# nothing yet\n")
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertEqual(output.stderr, "yxdownload: <stdin> has no URLs; nothing to do.\n")
        XCTAssertEqual(output.stdout, "")
        XCTAssertFalse(FileManager.default.fileExists(atPath: work.appendingPathComponent(queue).path))
    }

    func testBadInputExitsTwoAndStoresNothing() async throws {
        serveGenerated("/a.bin", size: 10, seed: 1)
        let url = server.url("/a.bin").absoluteString
        try writeList("\(url)\n  foo=1\nftp://example.com/x\n\(url)\n  out=../escape\n", name: "bad.txt")
        let list = try await yxdownload("enqueue", "--queue", queue, "-i", "bad.txt")
        XCTAssertEqual(list.status, 2)
        XCTAssertTrue(list.stderr.contains("bad.txt:2: "), list.stderr)
        XCTAssertTrue(list.stderr.contains("bad.txt:3: "), list.stderr)
        XCTAssertTrue(list.stderr.contains("bad.txt:5: "), list.stderr)
        XCTAssertTrue(list.stderr.contains("nothing was stored"), list.stderr)

        let argument = try await yxdownload("enqueue", "--queue", queue, url, "ftp://example.com/x")
        XCTAssertEqual(argument.status, 2)
        XCTAssertTrue(argument.stderr.contains("ftp"), argument.stderr)

        let noQueue = try await yxdownload("enqueue", url)
        XCTAssertEqual(noQueue.status, 2)
        XCTAssertTrue(noQueue.stderr.contains("--queue"), noQueue.stderr)

        // An unknown option is the error reported, also when no URL is given (argument-parser checks the
        // command before it reports the arguments nobody took).
        for bogus in [["--frobnicate"], ["-Z"], ["--frobnicate", url]] {
            let unknown = try await RunningCommand(["enqueue", "--queue", queue] + bogus, in: work).wait()
            XCTAssertEqual(unknown.status, 2, "\(bogus): \(unknown.stderr)")
            XCTAssertTrue(unknown.stderr.contains("Unknown option '\(bogus[0])'"), "\(bogus) → \(unknown.stderr)")
        }
        // A worker's option given to enqueue is named as such, not taken for a URL (found by a helper's review).
        for (option, value) in [("-d", "elsewhere"), ("-x", "4"), ("--dir=elsewhere", nil), ("-j8", nil)] {
            let misplaced = try await RunningCommand(
                ["enqueue", "--queue", queue, option] + (value.map { [$0] } ?? []) + [url], in: work
            ).wait()
            XCTAssertEqual(misplaced.status, 2, misplaced.stderr)
            XCTAssertTrue(misplaced.stderr.hasPrefix("Error: enqueue has no \(option.prefix(2) == "--" ? String(option.prefix { $0 != "=" }) : String(option.prefix(2))): the worker's -d"), misplaced.stderr)
        }
        let nothing = try await yxdownload("enqueue", "--queue", queue)
        XCTAssertEqual(nothing.status, 2)
        XCTAssertTrue(nothing.stderr.contains("nothing to queue: give URLs"), nothing.stderr)

        XCTAssertFalse(FileManager.default.fileExists(atPath: work.appendingPathComponent(queue).path), "a store was created")
        let status = try await yxdownload("status", "--queue", queue)
        XCTAssertEqual(status.status, 1)
        XCTAssertTrue(status.stderr.contains("no queue at jobs.sqlite"), status.stderr)
    }

    func testWithoutYXDownloadQueueTheQueueSubcommandsParseButSayWhatIsMissing() async throws {
        // A yxdownload installed alone: it parses `enqueue`, `worker` and `status`, prints their help and
        // usage errors, and says which program it lacks to run them (exit 1) instead of crashing.
        let lone = work.appendingPathComponent("alone")
        try FileManager.default.createDirectory(at: lone, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: RunningCommand.binary, to: lone.appendingPathComponent("yxdownload"))
        let program = lone.appendingPathComponent("yxdownload").path
        func run(_ arguments: String...) async throws -> CommandOutput {
            try await RunningCommand(arguments, in: work, environment: ["PATH": lone.path], executable: program).wait()
        }
        let help = try await run("enqueue", "--help")
        XCTAssertEqual(help.status, 0, help.stderr)
        XCTAssertTrue(help.stdout.contains("OVERVIEW: Store downloads in a queue"), help.stdout)
        let usage = try await run("worker", "--queue", queue, "-j", "0")
        XCTAssertEqual(usage.status, 2, usage.stderr)
        XCTAssertTrue(usage.stderr.contains("--jobs must be between 1 and 1000"), usage.stderr)

        let status = try await run("status", "--queue", queue)
        XCTAssertEqual(status.status, 1, status.stderr)
        XCTAssertEqual(
            status.stderr,
            "yxdownload: cannot run 'status': yxdownload-queue, which runs it, is neither in \(lone.resolvingSymlinksInPath().path) "
                + "nor on PATH. Install yxdownload-queue in the same folder as yxdownload (see the README).\n")
        XCTAssertEqual(status.stdout, "")
        XCTAssertFalse(FileManager.default.fileExists(atPath: work.appendingPathComponent(queue).path), "a store was created")
    }

    func testStatusShowsStatesBytesAndRunningDownloadsPerWorker() async throws {
        // Two slow files (2 MiB at 128 KiB/s: about 16 s each), one that is not there. Both status
        // snapshots below must come while they run: each launches a process and opens the store, which
        // takes seconds under the thread sanitizer on a loaded machine.
        let sources = try serveFiles(2, size: { _ in 2 << 20 }, bytesPerSecond: 128 << 10)
        try writeList(
            sources.map { server.url("/\($0.name)").absoluteString }.joined(separator: "\n") + "\n"
                + server.url("/missing.bin").absoluteString + "\n")
        let enqueue = try await yxdownload("enqueue", "--queue", queue, "-i", "urls.txt")
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)

        let worker = try startWorker("--exit-when-empty", "-j", "3")
        // Wait until both downloads are running with bytes recorded.
        var running: [[String: Any]] = []
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let status = try await status()
            let workers = status["workers"] as? [[String: Any]] ?? []
            running = workers.flatMap { $0["jobs"] as? [[String: Any]] ?? [] }
            if count(status, "failed") == 1 && running.count == 2
                && running.allSatisfy({ (($0["bytes_done"] as? NSNumber)?.int64Value ?? 0) > 0 })
            {
                XCTAssertEqual(workers.count, 1)
                XCTAssertEqual(count(status, "running"), 2)
                break
            }
            try await Task.sleep(nanoseconds: 100_000_000)
        }
        XCTAssertEqual(Set(running.compactMap { $0["file"] as? String }), ["f0.bin", "f1.bin"], "\(running)")
        for job in running {
            XCTAssertEqual((job["bytes_total"] as? NSNumber)?.int64Value, 2 << 20)
            XCTAssertEqual(job["attempt"] as? Int, 1)
        }
        let table = try await yxdownload("status", "--queue", queue)
        XCTAssertEqual(table.status, 0)
        let lines = table.stdoutLines
        XCTAssertEqual(lines.first, "queue jobs.sqlite")
        XCTAssertTrue(lines.contains { $0.hasPrefix("state ") && $0.contains("bytes done") && $0.contains("bytes total") }, table.stdout)
        XCTAssertTrue(lines.contains { $0.range(of: #"^running\s+2\s+\S+ \S+\s+4\.0 MiB$"#, options: .regularExpression) != nil }, table.stdout)
        XCTAssertTrue(lines.contains { $0.range(of: #"^failed\s+1\s"#, options: .regularExpression) != nil }, table.stdout)
        XCTAssertTrue(lines.contains { $0.hasPrefix("worker ") && $0.contains("progress") }, table.stdout)
        XCTAssertEqual(lines.filter { $0.contains(" f0.bin ") || $0.contains(" f1.bin ") }.count, 2, table.stdout)
        XCTAssertTrue(lines.contains { $0.contains(" of 2.0 MiB") }, table.stdout)

        // Seen while they ran: the rest of both files at full speed.
        await server.liftPace()
        let finished = await worker.wait(timeout: 120)
        let output = try XCTUnwrap(finished, "the worker did not exit")
        XCTAssertEqual(output.status, 1, "a download failed for good: \(output.stderr)")
        XCTAssertTrue(output.stderr.contains("fail  out/missing.bin  HTTP 404"), output.stderr)
        XCTAssertTrue(holdsGenerated("out/f0.bin", size: 2 << 20, seed: 1000))
        XCTAssertTrue(holdsGenerated("out/f1.bin", size: 2 << 20, seed: 1001))
        let after = try await status()
        XCTAssertEqual(count(after, "succeeded"), 2)
        XCTAssertEqual(count(after, "failed"), 1)
        XCTAssertEqual((after["workers"] as? [Any])?.count, 0)
    }

    func testWorkerJSONPrintsStartProgressFinishAndSummaryEvents() async throws {
        // One file of 1.5 MB at 600 KB/s: about 2.5 s, so at least one progress event (once a second).
        serveGenerated("/slow.bin", size: 1_500_000, seed: 31, bytesPerSecond: 600_000)
        let sources = try serveFiles(2, size: { Int64(10_000 + $0) })
        let enqueue = try await yxdownload(
            "enqueue", "--queue", queue, "-i", "urls.txt", server.url("/slow.bin").absoluteString)
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)
        let finished = try await startWorker("--exit-when-empty", "--json").wait(timeout: 120)
        let output = try XCTUnwrap(finished, "the worker did not exit")
        XCTAssertEqual(output.status, 0, output.stderr)
        let all = try output.stdoutLines.map { line in
            try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
        }
        func events(_ kind: String, _ file: String? = nil) -> [[String: Any]] {
            all.filter { $0["event"] as? String == kind && (file == nil || $0["file"] as? String == file) }
        }
        for file in sources.map({ "out/\($0.name)" }) + ["out/slow.bin"] {
            XCTAssertEqual(events("start", file).count, 1, "one start for \(file): \(output.stdout)")
            XCTAssertEqual(events("finish", file).count, 1, "one finish for \(file)")
        }
        XCTAssertEqual(events("finish", "out/slow.bin").first?["bytes"] as? Int, 1_500_000)
        XCTAssertEqual(
            events("finish", "out/slow.bin").first?["sha256"] as? String, GeneratedContent.sha256(size: 1_500_000, seed: 31))
        let progress = events("progress", "out/slow.bin")
        XCTAssertGreaterThanOrEqual(progress.count, 1, output.stdout)
        XCTAssertTrue(progress.allSatisfy { ($0["bytes"] as? Int ?? -1) <= 1_500_000 && $0["total"] as? Int == 1_500_000 })
        XCTAssertEqual(all.last?["event"] as? String, "summary")
        XCTAssertEqual(all.last?["done"] as? Int, 3)
        XCTAssertTrue(output.stderr.contains("yxdownload: 3 done, 0 skipped, 0 failed"), output.stderr)
        XCTAssertTrue(holdsGenerated("out/slow.bin", size: 1_500_000, seed: 31))
    }

    func testWorkerOnATerminalDrawsABarPerRunningDownload() throws {
        // In this process, on a fake terminal of 100 columns: 1.2 MB at 800 KB/s is about 1.5 s of bars.
        serveGenerated("/slow.bin", size: 1_200_000, seed: 41, bytesPerSecond: 800_000)
        let store = work.appendingPathComponent(queue).path
        let terminal = ProgressRendererTests.FakeTerminal()
        let enqueue = try EnqueueCommand.parse(["--queue", store, "-q", server.url("/slow.bin").absoluteString])
        XCTAssertEqual(enqueue.execute(console: terminal.console(columns: 100)), 0, terminal.err)
        let worker = try WorkerCommand.parse(["--queue", store, "-d", work.appendingPathComponent("out").path, "--exit-when-empty"])
        XCTAssertEqual(worker.execute(console: terminal.console(columns: 100)), 0, terminal.err)

        let screen = terminal.out
        XCTAssertTrue(screen.contains("\u{1B}[?25l"), "the cursor is hidden while bars show: \(screen.prefix(200).debugDescription)")
        XCTAssertTrue(screen.hasSuffix("\u{1B}[?25h"), "and shown again at the end")
        let bar = try XCTUnwrap(
            screen.components(separatedBy: "\n").first { $0.contains("slow.bin") && $0.contains("%") && $0.contains("[") },
            "a bar for slow.bin: \(screen.debugDescription)")
        // What follows the last "erase line": the bar as the terminal shows it.
        XCTAssertLessThanOrEqual(TextWidth.of(bar.components(separatedBy: "\u{1B}[2K").last ?? bar), 99, bar.debugDescription)
        XCTAssertTrue(screen.contains("[0] "), "the overall line counts what ended, with no total: a queue has none")
        XCTAssertTrue(screen.contains("done  \(work.appendingPathComponent("out").path)/slow.bin  1.1 MiB in "), screen.debugDescription)
        XCTAssertTrue(screen.contains("yxdownload: worker "), "the banner above the bars")
        XCTAssertTrue(terminal.err.contains("yxdownload: 1 done, 0 skipped, 0 failed"), terminal.err)
        XCTAssertTrue(holdsGenerated("out/slow.bin", size: 1_200_000, seed: 41))
    }

    /// A worker's `-j` bounds its transfers as a plain run's does (a download waiting for the disk gives
    /// its place to the next claim): paced responses (0.15 s each) overlap whenever transfers do, and the
    /// server saw at most 2 at once.
    func testAWorkersJobsBoundItsTransfers() async throws {
        // 0.6 s a file: the worker's two claims overlap however far apart a slow machine makes them.
        let sources = try serveFiles(8, size: { _ in 60_000 }, bytesPerSecond: 100_000)
        let enqueue = try await yxdownload("enqueue", "--queue", queue, "-i", "urls.txt")
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)
        let finished = try await startWorker("--exit-when-empty", "-j", "2").wait(timeout: 120)
        let output = try XCTUnwrap(finished, "the worker did not exit")
        XCTAssertEqual(output.status, 0, output.stderr)
        assertAllWhole(sources, in: "out")
        XCTAssertEqual(server.mostResponsesAtOnce, 2, "never more than -j 2 transfers, and -j 2 were used")
        let after = try await status()
        XCTAssertEqual(count(after, "succeeded"), 8)
    }

    func testPerHostLimitHoldsAcrossTheWorkersOfTheStore() async throws {
        // 3 files of 400 KB at 800 KB/s: at least half a second each, however fast the machine. With one
        // download per host at a time, each file's request comes after the previous file's last byte,
        // although two workers with -j 3 each could take all three at once.
        let sources = try serveFiles(3, size: { Int64(400_000 + $0) }, bytesPerSecond: 800_000)
        let enqueue = try await yxdownload("enqueue", "--queue", queue, "--per-host", "1", "-i", "urls.txt")
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)
        let origin = "http://127.0.0.1:\(server.url("/").port ?? 0)"
        let limits = try await status()["limits"] as? [[String: Any]]
        XCTAssertEqual(limits?.count, 1, "one limit: one host")
        XCTAssertEqual(limits?.first?["host"] as? String, origin)
        XCTAssertEqual(limits?.first?["limit"] as? Int, 1)

        let workers = try [startWorker("--exit-when-empty", "-j", "3"), startWorker("--exit-when-empty", "-j", "3")]
        for worker in workers {
            let finished = await worker.wait(timeout: 120)
            let output = try XCTUnwrap(finished, "a worker did not exit")
            XCTAssertEqual(output.status, 0, output.stderr)
        }
        assertAllWhole(sources, in: "out")
        let starts = sources.compactMap { server.requests(to: "/\($0.name)").first?.receivedAt }.sorted()
        XCTAssertEqual(starts.count, 3)
        for (earlier, later) in zip(starts, starts.dropFirst()) {
            XCTAssertGreaterThanOrEqual(
                later - earlier, 450_000_000, "a download started before the previous one from its host could end")
        }

        let bad = try await yxdownload("enqueue", "--queue", queue, "--per-host", "0", server.url("/f0.bin").absoluteString)
        XCTAssertEqual(bad.status, 2)
        XCTAssertTrue(bad.stderr.contains("--per-host must be between 1 and 1000 (got 0)"), bad.stderr)
    }

    func testTransientFailureIsQueuedAgainAndAPermanentOneFailsForGood() async throws {
        // Two 503s: with --retries 0 the first attempt fails with the first, the store's retry (about a
        // second later) meets the second, the third attempt gets the file.
        var flaky = Resource(.generated(size: 50_000, seed: 7), etag: "\"7\"")
        flaky.failures = [.status(503), .status(503)]
        server.serve("/flaky.bin", flaky)
        let enqueue = try await yxdownload(
            "enqueue", "--queue", queue, "--retries", "0", server.url("/flaky.bin").absoluteString,
            server.url("/gone.bin").absoluteString)
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)
        let finished = try await startWorker("--exit-when-empty").wait(timeout: 120)
        let output = try XCTUnwrap(finished)
        XCTAssertEqual(output.status, 1, "gone.bin failed for good: \(output.stderr)")
        XCTAssertEqual(output.stderr.components(separatedBy: "queued again for a later attempt").count - 1, 2, output.stderr)
        // A line that a script counts as a failure is one only for good (found by a helper's review).
        XCTAssertEqual(output.stderr.components(separatedBy: "\nagain out/flaky.bin  HTTP 503").count - 1, 2, output.stderr)
        // Without advice to run anything again: the store does (found by a review).
        let flakyURL = server.url("/flaky.bin").absoluteString
        XCTAssertEqual(
            output.stderrLines.filter { $0.hasPrefix("again ") },
            Array(repeating: "again out/flaky.bin  HTTP 503 Service Unavailable: the server failed; queued again for a later "
                + "attempt (\(flakyURL))", count: 2), output.stderr)
        XCTAssertEqual(output.stderr.components(separatedBy: "fail  ").count - 1, 1, output.stderr)
        XCTAssertTrue(output.stderr.contains("fail  out/gone.bin  HTTP 404"), output.stderr)
        XCTAssertTrue(holdsGenerated("out/flaky.bin", size: 50_000, seed: 7))
        let status = try await status()
        XCTAssertEqual(count(status, "succeeded"), 1)
        XCTAssertEqual(count(status, "failed"), 1)

        // Which download failed, and why, as the worker's help promises (found by a helper's review).
        let gone = server.url("/gone.bin").absoluteString
        let failed = try await yxdownload("status", "--queue", queue, "--failed")
        XCTAssertEqual(failed.status, 0, failed.stderr)
        XCTAssertEqual(
            failed.stdout, "fail  gone.bin  HTTP 404 Not Found: the server has no file at this URL; check the URL (\(gone))\n")
        let failedJSON = try await yxdownload("status", "--queue", queue, "--failed", "--json")
        let event = try JSONSerialization.jsonObject(with: Data(failedJSON.stdout.utf8)) as? [String: Any]
        XCTAssertEqual(event?["file"] as? String, "gone.bin", failedJSON.stdout)
        XCTAssertEqual(event?["url"] as? String, gone)
    }

    /// A worker that finds its job's `.part` written by another process (a plain run into the worker's
    /// folder here; a worker whose lease ran out, in life) waits for it instead of writing into it (or
    /// spending the job's attempts on quick requeues), then finds the file whole and skips it.
    func testAWorkerWaitsForAPartThatAnotherProcessWrites() async throws {
        // The plain run pauses 3 s after its first MiB, so that it still writes when even a slow worker looks
        // (without the pause it lasted 4 s; its sibling below failed that way), and ends within the 10 s wait.
        let (output, url) = try await workWhileAPlainRunWritesThePart(lease: 10, pauseSeconds: 3, until: "\nwait  out/movie.bin")
        XCTAssertTrue(
            output.stderr.contains(
                "\nwait  out/movie.bin  out/movie.bin.part is being written by another download of this file (another "
                    + "yxdownload run, or a worker sharing the folder); this worker waits for it to end, up to 10 s (\(url))\n"),
            output.stderr)
        XCTAssertFalse(output.stderr.contains("again "), output.stderr)
    }

    /// A worker whose wait for another process's `.part` outlasts its lease (a plain run of a large file:
    /// a worker whose lease ran out would have stopped by then) gives the job back for a lease, uncounted,
    /// so that its slot serves other downloads, and skips the file once it is whole.
    func testAWorkerGivesBackAJobWhosePartAnotherProcessWritesForLong() async throws {
        // The plain run pauses 8 s after its first MiB, so that it still writes when the worker's wait
        // has outlasted the lease, however slowly the worker starts: without the pause the run lasted 4 s,
        // and under the thread sanitizer on a slow machine the worker started waiting too late for it
        // (it found the file whole and skipped it).
        let (output, url) = try await workWhileAPlainRunWritesThePart(lease: 1, pauseSeconds: 8, until: "\nagain out/movie.bin")
        XCTAssertTrue(
            output.stderr.contains(
                "\nagain out/movie.bin  out/movie.bin.part is still being written by another download of this file; given back "
                    + "to the queue, to be tried again in 1 s (\(url))\n"),
            output.stderr)
    }

    /// A worker that stops (SIGTERM) while it waits for another process's `.part` gives the job back at
    /// once, instead of waiting out its grace period (found by a review: it held the worker for the whole
    /// `--grace`).
    func testAWorkerThatStopsDuringTheWaitGivesTheJobBackAtOnce() async throws {
        serveGenerated("/movie.bin", size: 3 << 20, seed: 21, bytesPerSecond: 64 * 1024)
        let url = server.url("/movie.bin").absoluteString
        let run = try RunningCommand([url, "-d", "out"], in: work)
        try await waitUntil("part of the file on disk") { fileSize("out/movie.bin.part") > 10_000 }
        let enqueue = try await yxdownload("enqueue", "--queue", queue, url)
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)
        let worker = try startWorker("--lease", "60", "--grace", "600")
        var running = 0
        for _ in 0..<300 where running != 1 {
            running = count(try await status(), "running")
            if running != 1 { try await Task.sleep(for: .milliseconds(100)) }
        }
        XCTAssertEqual(running, 1, "the worker did not claim the download")
        worker.send(SIGTERM)
        let stopped = await worker.wait(timeout: 30)
        run.send(SIGKILL)
        _ = await run.wait()
        let output = try XCTUnwrap(stopped, "the worker waited out its grace period")
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertTrue(output.stderr.contains("0 done, 0 skipped, 0 failed, 1 canceled"), output.stderr)
        let after = try await status()
        XCTAssertEqual(count(after, "available"), 1, "not given back: \(after)")
        let record = try await SQLiteJobStore.open(path: work.appendingPathComponent(queue).path)
        let job = try await record.job(JobID(rawValue: 1))
        try await record.close()
        XCTAssertEqual(job?.failures, 0)
        XCTAssertLessThan(try XCTUnwrap(job?.readyAt).timeIntervalSinceNow, 5, "given back for later instead of at once")
    }

    /// Starts a plain run of a 3 MiB file at 768 KiB/s (about 4 s, and `pauseSeconds` more after its first
    /// MiB), queues the same download, and runs a worker with `--lease` until the queue is empty; checks
    /// that the worker counted no failure and sent no request, and skipped the file the run left whole.
    /// Once the worker's output holds `said` (what it does about the run's `.part`), the run goes on at
    /// full speed.
    private func workWhileAPlainRunWritesThePart(
        lease: Int, pauseSeconds: Double = 0, until said: String
    ) async throws -> (CommandOutput, String) {
        let size: Int64 = 3 << 20
        serveGenerated(
            "/movie.bin", size: size, seed: 21, bytesPerSecond: 768 * 1024,
            failures: pauseSeconds > 0 ? [.stall(afterBytes: 1 << 20, seconds: pauseSeconds)] : [])
        let url = server.url("/movie.bin").absoluteString
        let run = try RunningCommand([url, "-d", "out"], in: work)
        try await waitUntil("part of the file on disk") { fileSize("out/movie.bin.part") > 100_000 }
        let enqueue = try await yxdownload("enqueue", "--queue", queue, url)
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)
        let worker = try startWorker("--exit-when-empty", "--lease", "\(lease)")
        try await waitUntil("the worker to say \(said.debugDescription)") { worker.stderrSoFar.contains(said) }
        await server.liftPace()
        let ranFirst = await run.wait(timeout: 120)
        XCTAssertEqual(try XCTUnwrap(ranFirst).status, 0)
        let finished = await worker.wait(timeout: 120)
        let output = try XCTUnwrap(finished, "the worker did not end")
        XCTAssertEqual(output.status, 0, output.stderr)
        let record = try await SQLiteJobStore.open(path: work.appendingPathComponent(queue).path)
        let failures = try await record.job(JobID(rawValue: 1))?.failures
        try await record.close()
        XCTAssertEqual(failures, 0, "the wait counted a failure")
        XCTAssertTrue(output.stderr.contains("0 done, 1 skipped, 0 failed"), output.stderr)
        XCTAssertTrue(holdsGenerated("out/movie.bin", size: size, seed: 21))
        XCTAssertEqual(server.requests(to: "/movie.bin").count, 1, "the worker sent a request")
        return (output, url)
    }

    /// A worker that cannot renew its lease in time (the store held by another process's long write, as
    /// a long enqueue does) stops the download and says so; the job runs again and resumes the `.part`
    /// (found by a review: the download stopped without a word, counted as canceled).
    func testAWorkerThatLosesItsLeaseSaysSoAndTheJobResumesLater() async throws {
        let size: Int64 = 3 << 20
        // The first response pauses after its first MiB until the worker gave it up: without the pause the file
        // took 3 s, in which this process had to open the store and hold it past the worker's lease.
        serveGenerated("/movie.bin", size: size, seed: 21, bytesPerSecond: 1 << 20, failures: [.stall(afterBytes: 1 << 20, seconds: 60)])
        let enqueue = try await yxdownload("enqueue", "--queue", queue, server.url("/movie.bin").absoluteString)
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)
        let worker = try startWorker("--exit-when-empty")  // --lease 1
        try await waitUntil("part of the file on disk") { fileSize("out/movie.bin.part") > 100_000 }
        // This process writes to the store until the worker has given up the download (at most a minute).
        let store = try await SQLiteJobStore.open(path: work.appendingPathComponent(queue).path)
        let deadline = Date().addingTimeInterval(60)
        var held = false
        let busy = JobRequestBatches {
            if held { return nil }
            held = true
            while Date() < deadline && !worker.stderrSoFar.contains("could not renew its lease") { usleep(20_000) }
            return []
        }
        _ = try await store.enqueue(batches: busy)
        try await store.close()
        // The download was given up: its next attempt resumes at full speed.
        await server.liftPace()
        let finished = await worker.wait(timeout: 120)
        let output = try XCTUnwrap(finished, "the worker did not end")
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertTrue(
            output.stderr.contains(
                "again out/movie.bin  stopped: this worker could not renew its lease on the job in time (the store did not "
                    + "answer, or was busy, for the --lease seconds); queued again, and the next attempt resumes the .part ("),
            output.stderr)
        XCTAssertTrue(output.stderr.contains("1 done, 0 skipped, 0 failed"), output.stderr)
        XCTAssertFalse(output.stderr.contains("canceled"), output.stderr)
        XCTAssertTrue(holdsGenerated("out/movie.bin", size: size, seed: 21))
        let ranges = server.requests(to: "/movie.bin").compactMap { $0.header("Range") }
        XCTAssertTrue(ranges.contains { $0 != "bytes=0-" }, "the next attempt did not resume: \(ranges)")
    }

    /// Conflicts with jobs this version cannot read, and more conflicts than the report lists one by one.
    func testEnqueueReportsJobsItCannotReadAndCountsConflictsBeyondTheFirstTen() async throws {
        let store = try await SQLiteJobStore.open(path: work.appendingPathComponent(queue).path)
        var unreadable = JobOptions(uniqueKey: "yxdownload:old.bin", onDuplicate: .join)
        unreadable.retry = StoredDownload.storeRetryPolicy
        _ = try await store.enqueue(JobRequest(name: StoredDownload.jobName, payload: Data("{\"v\":2}".utf8), options: unreadable))
        try await store.close()
        let old = try await yxdownload("enqueue", "--queue", queue, "http://127.0.0.1:9/old.bin")
        XCTAssertEqual(old.status, 1, old.stderr)
        XCTAssertTrue(
            old.stderr.hasPrefix(
                "yxdownload: old.bin is already queued (job 1) as a job this version cannot read (a worker discards it; "
                    + "'status --failed' then lists it)\n"), old.stderr)

        try writeList((0..<12).map { "http://127.0.0.1:9/a/f\($0).bin\n" }.joined(), name: "a.txt")
        try writeList((0..<12).map { "http://127.0.0.1:9/b/f\($0).bin\n" }.joined(), name: "b.txt")
        let first = try await yxdownload("enqueue", "--queue", queue, "-i", "a.txt")
        XCTAssertEqual(first.status, 0, first.stderr)
        let second = try await yxdownload("enqueue", "--queue", queue, "-i", "b.txt")
        XCTAssertEqual(second.status, 1, second.stderr)
        XCTAssertEqual(second.stderrLines.filter { $0.contains(" is already queued (job ") }.count, 10, second.stderr)
        XCTAssertTrue(second.stderr.contains("\nyxdownload: … and 2 more\nyxdownload: 12 entries name files already queued"), second.stderr)
        let total = try await status()["total"] as? Int
        XCTAssertEqual(total, 13)

        // An entry without a checksum joins a queued job that checks one: that job is the stricter.
        try writeList("http://127.0.0.1:9/c.bin\n  checksum=sha-256=\(String(repeating: "0", count: 64))\n", name: "c.txt")
        let checked = try await yxdownload("enqueue", "--queue", queue, "-i", "c.txt")
        XCTAssertEqual(checked.status, 0, checked.stderr)
        let unchecked = try await yxdownload("enqueue", "--queue", queue, "http://127.0.0.1:9/c.bin")
        XCTAssertEqual(unchecked.status, 0, unchecked.stderr)
        XCTAssertEqual(unchecked.stdout, "queued 1 download in jobs.sqlite: 0 new, 1 already queued\n")
    }

    /// What a store holds is printed escaped: a job written by another program (a shared store) cannot
    /// drive the terminal, and its file name must be one `enqueue` could have made.
    func testAJobWithControlCharactersIsDiscardedAndPrintedEscaped() async throws {
        let store = try await SQLiteJobStore.open(path: work.appendingPathComponent(queue).path)
        let crafted = StoredDownload(
            url: "http://127.0.0.1:9/a.bin", path: ["\u{1B}[2Jx\u{202E}"], checksum: nil, options: StoredDownloadOptions())
        let badChecksum = StoredDownload(
            url: "ftp:eve:pw@127.0.0.1/b.bin", path: ["b.bin"], checksum: "sha-256=\u{1B}]0;pwned\u{7}", options: StoredDownloadOptions())
        _ = try await store.enqueue([
            try JobRequest(name: StoredDownload.jobName, parameters: crafted),
            try JobRequest(name: StoredDownload.jobName, parameters: badChecksum),
        ])
        try await store.close()
        let finished = try await startWorker("--exit-when-empty").wait(timeout: 60)
        let output = try XCTUnwrap(finished)
        XCTAssertEqual(output.status, 1, output.stderr)
        XCTAssertFalse(output.stderr.contains("\u{1B}") || output.stderr.contains("\u{202E}") || output.stderr.contains("\u{7}"), output.stderr)
        XCTAssertTrue(
            output.stderr.contains(
                "\nfail  out/\\u{1B}[2Jx\\u{202E}  discarded: the file's name holds characters a name may not have (control "
                    + "characters, '\\' or marks that reorder text) (http://127.0.0.1:9/a.bin)\n"),
            output.stderr)
        XCTAssertTrue(output.stderr.contains("\nfail  out/b.bin  discarded: not an http or https URL (…@127.0.0.1/b.bin)\n"), output.stderr)
        XCTAssertFalse(output.stderr.contains("pw@"), output.stderr)
        let failed = try await yxdownload("status", "--queue", queue, "--failed")
        XCTAssertFalse(failed.stdout.contains("\u{1B}") || failed.stdout.contains("pw@"), failed.stdout)
        XCTAssertEqual(failed.stdoutLines.count, 2, failed.stdout)
    }

    /// A job that an older `enqueue` stored with an invisible character in its name (it kept them; names
    /// now replace them) runs under that name, where its `.part` may be (found by a review: it was
    /// discarded).
    func testAJobStoredWithAnInvisibleCharacterByAnOlderVersionRuns() async throws {
        serveGenerated("/zw.bin", size: 5_000, seed: 77)
        let store = try await SQLiteJobStore.open(path: work.appendingPathComponent(queue).path)
        let older = StoredDownload(
            url: server.url("/zw.bin").absoluteString, path: ["zw\u{200B}.bin"], checksum: nil,
            options: StoredDownloadOptions())
        _ = try await store.enqueue([try JobRequest(name: StoredDownload.jobName, parameters: older)])
        try await store.close()
        let finished = try await startWorker("--exit-when-empty").wait(timeout: 60)
        let output = try XCTUnwrap(finished)
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertTrue(output.stdout.contains("done  out/zw\\u{200B}.bin"), "printed escaped: \(output.stdout)")
        XCTAssertTrue(holdsGenerated("out/zw\u{200B}.bin", size: 5_000, seed: 77))
        XCTAssertEqual(FileNaming.sanitize("zw\u{200B}.bin"), "zw_.bin", "a new enqueue names it without")
    }

    /// A stored URL is shown without its credentials, also one `enqueue` would not have stored (found by
    /// reviews: a URL without `//`, or one that does not parse with a `/` in its password, showed them).
    func testStoredURLsAreShownWithoutCredentials() {
        func shown(_ url: String) -> String {
            StoredDownload(url: url, path: ["a"], checksum: nil, options: StoredDownloadOptions()).redactedURL
        }
        XCTAssertEqual(shown("https://me:pw@example.com/a?mail=bob@example.org"), "https://example.com/a?mail=bob@example.org")
        for url in ["ftp:eve:pw@127.0.0.1/a1", "https:eve:pw@127.0.0.1/a2", "http://eve:se/cret@127.0.0.1:18431/s3.bin", "user:pw@host/a"] {
            XCTAssertFalse(shown(url).contains("pw") || shown(url).contains("cret"), shown(url))
        }
        XCTAssertEqual(shown("http://example.com/\u{1B}[2J"), "http://example.com/%1B%5B2J")
    }

    /// An IPv6 host of a per-host limit is shown in brackets (the key keeps the form stores hold).
    func testPerHostLimitsShowIPv6HostsInBrackets() {
        XCTAssertEqual(QueueReport.shownOrigin("http://::1:8080"), "http://[::1]:8080")
        XCTAssertEqual(QueueReport.shownOrigin("https://2001:db8::1:443"), "https://[2001:db8::1]:443")
        XCTAssertEqual(QueueReport.shownOrigin("http://[::1]:8080"), "http://[::1]:8080")
        XCTAssertEqual(QueueReport.shownOrigin("http://example.com:80"), "http://example.com:80")
        XCTAssertEqual(QueueReport.shownOrigin("http://e\u{1B}x:80"), "http://e\\u{1B}x:80")
    }

    /// A job no worker can run (parameters another version stored, a URL that is not http) is discarded:
    /// the worker says so as a failure, and `status --failed` lists it with the reason (found by a review:
    /// the reason was only in the database).
    func testDiscardedJobsAreReportedByTheWorkerAndListedByStatus() async throws {
        let store = try await SQLiteJobStore.open(path: work.appendingPathComponent(queue).path)
        let ftp = StoredDownload(url: "ftp://me:s3cret@example.com/a.bin", path: ["a.bin"], checksum: nil, options: StoredDownloadOptions())
        _ = try await store.enqueue([
            JobRequest(name: StoredDownload.jobName, payload: Data("{\"url\":1}".utf8)),
            try JobRequest(name: StoredDownload.jobName, parameters: ftp),
            JobRequest(name: StoredDownload.jobName, payload: Data("[]".utf8)),
        ])
        try await store.close()
        let finished = try await startWorker("--exit-when-empty").wait(timeout: 60)
        let output = try XCTUnwrap(finished)
        XCTAssertEqual(output.status, 1, output.stderr)
        XCTAssertTrue(
            output.stderr.contains("\nfail  job 1  discarded: its parameters cannot be read (url is not what this version expects): "
                + "stored by another version?\n"), output.stderr)
        XCTAssertTrue(output.stderr.contains("\nfail  out/a.bin  discarded: not an http or https URL (ftp://example.com/a.bin)\n"), output.stderr)
        XCTAssertTrue(
            output.stderr.contains("\nfail  job 3  discarded: its parameters cannot be read (not the JSON object this version expects)"),
            output.stderr)
        XCTAssertTrue(output.stderr.contains("0 done, 0 skipped, 3 failed"), output.stderr)
        XCTAssertFalse(output.stderr.contains("s3cret"), output.stderr)
        let discarded = count(try await status(), "discarded")
        XCTAssertEqual(discarded, 3)

        let failed = try await yxdownload("status", "--queue", queue, "--failed")
        XCTAssertEqual(failed.status, 0, failed.stderr)
        let lines = Array(failed.stdout.split(separator: "\n").map(String.init).prefix(2))
        XCTAssertEqual(failed.stdoutLines.count, 3, failed.stdout)
        XCTAssertEqual(lines.first, "fail  job 1  discarded: its parameters cannot be read (url is not what this version expects): stored by another version?")
        XCTAssertEqual(lines.last, "fail  a.bin  discarded: not an http or https URL (ftp://example.com/a.bin)")
        let json = try await yxdownload("status", "--queue", queue, "--failed", "--json")
        let events = try json.stdout.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        XCTAssertEqual(events.map { $0?["file"] as? String }, ["job 1", "a.bin", "job 3"], json.stdout)
        XCTAssertEqual(events[1]?["error"] as? String, "discarded: not an http or https URL")
    }

    // MARK: - kill -9

    func testKilledWorkerIsFinishedByAnotherWhichResumesItsPartFiles() async throws {
        // 3 MiB at 512 KiB/s per connection: about 6 s per file; a .part of 1 MiB or more has its sidecar
        // before its first byte, so it resumes.
        let sources = try serveFiles(3, size: { Int64(3 << 20) + Int64($0) }, bytesPerSecond: 512 << 10)
        let enqueue = try await yxdownload("enqueue", "--queue", queue, "-i", "urls.txt")
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)
        let first = try startWorker("-j", "3")
        try await waitUntil(timeout: 60, "every download to have bytes in its .part") {
            sources.allSatisfy { fileSize("out/\($0.name).part") > 300_000 }
        }
        first.send(SIGKILL)
        let killed = await first.wait()
        XCTAssertEqual(killed.status, 128 + SIGKILL)
        XCTAssertEqual(sources.filter { fileSize("out/\($0.name)") >= 0 }.count, 0, "a final file appeared too early")

        // The next worker resumes them at full speed.
        await server.liftPace()
        let finished = try await startWorker("--exit-when-empty", "-j", "3").wait(timeout: 120)
        let second = try XCTUnwrap(finished)
        XCTAssertEqual(second.status, 0, second.stderr)
        assertAllWhole(sources, in: "out")
        XCTAssertEqual(second.stdoutLines.filter { $0.contains(", resumed at ") }.count, 3, second.stdout)
        let status = try await status()
        XCTAssertEqual(count(status, "succeeded"), 3)
        XCTAssertEqual(status["total"] as? Int, 3)
    }

    func testSIGTERMGivesRunningDownloadsBackWithTheirPartFiles() async throws {
        // 12 s a file for all the worker runs below together, each stopped once its downloads went on: a file
        // that ended within them would spoil the counts.
        let sources = try serveFiles(2, size: { Int64(3 << 20) + Int64($0) }, bytesPerSecond: 256 << 10)
        let enqueue = try await yxdownload("enqueue", "--queue", queue, "-i", "urls.txt")
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)
        let worker = try startWorker("--grace", "0")
        try await waitUntil(timeout: 60, "both downloads to have bytes in their .part") {
            sources.allSatisfy { fileSize("out/\($0.name).part") > 300_000 }
        }
        #if os(Linux)
        // `yxdownload worker` became yxdownload-queue (exec) in the same process: the signal below reaches it.
        let image = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(worker.pid)/exe")
        XCTAssertEqual(URL(fileURLWithPath: image).lastPathComponent, "yxdownload-queue")
        #endif
        worker.send(SIGTERM)
        let stopped = await worker.wait(timeout: 60)
        let output = try XCTUnwrap(stopped, "the worker did not stop on SIGTERM")
        XCTAssertEqual(output.status, 0, output.stderr)
        XCTAssertTrue(output.stderr.contains("0 done, 0 skipped, 0 failed, 2 canceled"), output.stderr)
        let status = try await status()
        XCTAssertEqual(count(status, "available"), 2, "the downloads were not given back: \(status)")
        XCTAssertEqual(count(status, "running"), 0)
        for source in sources { XCTAssertGreaterThan(fileSize("out/\(source.name).part"), 300_000) }

        // With --exit-when-empty, a signal that stops the worker before the queue is empty is an
        // interruption (130 for SIGINT), not a success.
        /// Waits until every `.part` grew past its size at the call.
        func waitForTheDownloadsToGoOn(_ what: String) async throws {
            let sizes = sources.map { fileSize("out/\($0.name).part") }
            try await waitUntil(timeout: 60, what) { zip(sources, sizes).allSatisfy { fileSize("out/\($0.name).part") > $1 } }
        }
        /// Waits for `worker` to stop after the signals it was sent (`what`), and checks that it exited
        /// with `expected` and gave both downloads back to the store.
        func assertStoppedAndGaveBack(_ worker: RunningCommand, _ what: String, status expected: Int32) async throws {
            let stopped = await worker.wait(timeout: 60)
            let output = try XCTUnwrap(stopped, "the worker did not stop on \(what)")
            XCTAssertEqual(output.status, expected, output.stderr)
            XCTAssertTrue(output.stderr.contains("0 done, 0 skipped, 0 failed, 2 canceled"), output.stderr)
            let status = try await self.status()
            XCTAssertEqual(count(status, "available"), 2, "after \(what): \(status)")
        }
        let interrupted = try startWorker("--grace", "0", "--exit-when-empty")
        try await waitForTheDownloadsToGoOn("the downloads to go on")
        interrupted.send(SIGINT)
        try await assertStoppedAndGaveBack(interrupted, "SIGINT", status: 130)

        // Started with SIGINT ignored (a script's background command), the worker keeps ignoring it; a
        // SIGTERM stops it (found by a review: the service group took SIGINT over, and the worker stopped
        // and exited 0 with its downloads queued).
        let background = try RunningCommand(
            ["worker", "--queue", queue, "-d", "out", "--lease", "1", "--grace", "0", "--exit-when-empty"], in: work,
            setup: "trap '' INT")
        try await waitForTheDownloadsToGoOn("the downloads to go on")
        background.send(SIGINT)
        try await waitForTheDownloadsToGoOn("the downloads to go on after a SIGINT")
        background.send(SIGTERM)
        try await assertStoppedAndGaveBack(background, "SIGTERM after an ignored SIGINT", status: 143)

        // SIGHUP (the terminal went away) stops it as SIGTERM does: 129 with --exit-when-empty. A second
        // SIGHUP does not cut the grace period short (a closed terminal often sends two: found by a
        // review); a SIGTERM then does.
        let hungUp = try RunningCommand(
            ["worker", "--queue", queue, "-d", "out", "--lease", "1", "--grace", "600", "--exit-when-empty"], in: work)
        try await waitForTheDownloadsToGoOn("the downloads to go on")
        hungUp.send(SIGHUP)
        try await waitForTheDownloadsToGoOn("the downloads to go on after a SIGHUP")
        hungUp.send(SIGHUP)
        try await waitForTheDownloadsToGoOn("the downloads to go on after a second SIGHUP")
        hungUp.send(SIGTERM)
        try await assertStoppedAndGaveBack(hungUp, "SIGTERM after SIGHUP", status: 129)

        // A second signal ends the grace period at once: after the first, the downloads go on (a grace of
        // ten minutes); after the second, they are given back.
        let patient = try startWorker("--grace", "600")
        try await waitForTheDownloadsToGoOn("the downloads to go on")
        patient.send(SIGTERM)
        try await waitForTheDownloadsToGoOn("the downloads to go on after a first SIGTERM")
        patient.send(SIGTERM)
        try await assertStoppedAndGaveBack(patient, "a second SIGTERM", status: 0)

        // The last worker resumes both at full speed.
        await server.liftPace()
        let finished = try await startWorker("--exit-when-empty").wait(timeout: 120)
        let next = try XCTUnwrap(finished)
        XCTAssertEqual(next.status, 0, next.stderr)
        XCTAssertEqual(next.stdoutLines.filter { $0.contains(", resumed at ") }.count, 2, next.stdout)
        assertAllWhole(sources, in: "out")
    }

    /// A download that fails on the worker's own disk (here full: a small tmpfs) is not the download's
    /// fault: the job goes back to the queue uncounted, the worker stops with the reason (exit 1)
    /// instead of taking and failing every job, and a worker with room finishes them all.
    func testAWorkerWhoseDiskIsFullGivesItsJobsBackAndStops() async throws {
        try XCTSkipUnless(getuid() == 0, "mounting a small tmpfs needs root (CI runs the suite as root)")
        let sources = (0..<6).map { Source(name: "l\($0).bin", size: Int64(300_000 + $0), seed: UInt64(2000 + $0)) }
        for source in sources { serveGenerated("/\(source.name)", size: source.size, seed: source.seed) }
        try writeList(sources.map { "\(server.url("/\($0.name)"))" }.joined(separator: "\n") + "\n")
        let enqueue = try await yxdownload("enqueue", "--queue", queue, "-i", "urls.txt")
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)
        let small = work.appendingPathComponent("small", isDirectory: true)
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        let mounted = try await RunningCommand(
            ["-t", "tmpfs", "-o", "size=256k,mode=0755", "tmpfs", small.path], in: work, executable: "/bin/mount"
        ).wait()
        try XCTSkipUnless(mounted.status == 0, "mount -t tmpfs is not allowed here: \(mounted.stderr)")
        let outcome: Result<CommandOutput?, any Error>
        do {
            outcome = .success(
                try await RunningCommand(
                    ["worker", "--queue", queue, "-d", "small", "--lease", "1", "-j", "2", "--exit-when-empty"], in: work
                ).wait(timeout: 60))
        } catch {
            outcome = .failure(error)
        }
        _ = try? await RunningCommand(["-l", small.path], in: work, executable: "/bin/umount").wait()
        let output = try XCTUnwrap(try outcome.get(), "the worker did not stop")
        XCTAssertEqual(output.status, 1, output.stderr)
        XCTAssertTrue(output.stderr.contains("yxdownload: the worker stopped: No space left on device ("), output.stderr)
        XCTAssertTrue(output.stderr.contains("Its downloads went back to the queue for another worker"), output.stderr)
        let after = try await self.status()
        XCTAssertEqual(count(after, "failed"), 0, "a full disk failed jobs for good: \(after)")
        XCTAssertEqual(count(after, "available"), sources.count, "\(after)")

        let finished = try await startWorker("--exit-when-empty").wait(timeout: 120)
        let next = try XCTUnwrap(finished)
        XCTAssertEqual(next.status, 0, next.stderr)
        assertAllWhole(sources, in: "out")
    }

    /// A folder of one job's (`dir=`) that cannot be written is that job's failure, not the worker's:
    /// the worker goes on with the others (stopping every worker for one job would stop the queue).
    func testAJobsOwnFolderThatCannotBeWrittenFailsThatJobOnly() async throws {
        let setpriv = "/usr/bin/setpriv"
        try XCTSkipUnless(getuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv), "needs root and setpriv")
        let sources = try serveFiles(3, size: { Int64(10_000 + $0) })
        try writeList(
            sources.map { "\(server.url("/\($0.name)"))" }.joined(separator: "\n") + "\n\(server.url("/f0.bin"))\n  dir=locked\n",
            name: "mixed.txt")
        let enqueue = try await yxdownload("enqueue", "--queue", queue, "-i", "mixed.txt")
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)
        let locked = work.appendingPathComponent("out/locked", isDirectory: true)
        try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: locked.path)
        let worker = try RunningCommand(
            ["--bounding-set=-dac_override,-dac_read_search", "--", RunningCommand.binary.path, "worker", "--queue", queue,
             "-d", "out", "--lease", "1", "--exit-when-empty"],
            in: work, executable: setpriv)
        let ended = await worker.wait(timeout: 60)
        let output = try XCTUnwrap(ended, "the worker did not stop")
        XCTAssertEqual(output.status, 1, output.stderr)
        XCTAssertTrue(output.stderr.contains("fail  out/locked/f0.bin  Permission denied"), output.stderr)
        XCTAssertFalse(output.stderr.contains("the worker stopped"), output.stderr)
        let after = try await self.status()
        XCTAssertEqual(count(after, "failed"), 1, "\(after)")
        XCTAssertEqual(count(after, "succeeded"), 3, "\(after)")
        assertAllWhole(sources, in: "out")
    }

    /// Another process (Python's sqlite3) holding the store's write lock (`BEGIN IMMEDIATE`) until it is
    /// killed, as a long enqueue would.
    private func lockStore() async throws -> RunningCommand {
        let locker = try RunningCommand(
            ["-c", "import sqlite3, sys, time\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                + "c.execute('BEGIN IMMEDIATE')\nprint('locked', flush=True)\ntime.sleep(120)", queue],
            in: work, executable: "/usr/bin/python3")
        try await waitUntil("the store to be locked") { locker.stdoutSoFar.contains("locked") }
        return locker
    }

    /// Runs SQL on the store from another process (Python's sqlite3), as another program sharing it would.
    private func runSQL(_ sql: String) async throws {
        let output = try await RunningCommand(
            ["-c", "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1], isolation_level=None)\nc.executescript(sys.argv[2])", queue, sql],
            in: work, executable: "/usr/bin/python3").wait()
        XCTAssertEqual(output.status, 0, output.stderr)
    }

    /// Claims refused by the store (here a trigger that fails every change of a job row): a worker run with
    /// --exit-when-empty stops after its claims kept failing, with the store's error in a line (no SQL
    /// statement), exit 1 (found by a helper's review: it waited for ever, silently). A worker run as a
    /// service keeps trying (the store may come back) but says so once, without -v and even with -q, and
    /// again when the store takes claims again; then it downloads (found by a helper's review: it said so
    /// only with -v).
    func testAWorkerWhoseClaimsKeepFailingSaysSo() async throws {
        let sources = try serveFiles(1, size: { _ in 1_000 })
        let enqueue = try await yxdownload("enqueue", "--queue", queue, "-i", "urls.txt")
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)
        try await runSQL("CREATE TRIGGER refuse BEFORE UPDATE ON jobs BEGIN SELECT RAISE(ABORT, 'claims refused by a test'); END;")

        // Both at once, as their claims back off the same 6 s: one that exits when idle gives up, a service
        // keeps trying.
        let batchWorker = try startWorker("--exit-when-empty", "-q")
        let service = try startWorker("-q")
        // Not left running when a check below fails (until its wait, its process ID is still its own).
        var serviceWaitedFor = false
        defer { if !serviceWaitedFor { service.send(SIGKILL) } }
        let batch = await batchWorker.wait(timeout: 60)
        let stopped = try XCTUnwrap(batch, "the worker did not stop")
        XCTAssertEqual(stopped.status, 1, stopped.stderr)
        XCTAssertTrue(stopped.stderr.contains("claims refused by a test"), stopped.stderr)
        XCTAssertFalse(stopped.stderr.contains("UPDATE"), stopped.stderr)

        try await waitUntil("the worker to say its claims fail") { service.stderrSoFar.contains("refuses this worker's claims") }
        try await runSQL("DROP TRIGGER refuse;")
        try await waitUntil("the worker to download") { fileSize("out/\(sources[0].name)") == 1_000 }
        service.send(SIGTERM)
        serviceWaitedFor = true
        let ended = await service.wait(timeout: 60)
        let output = try XCTUnwrap(ended, "the worker did not stop on SIGTERM")
        XCTAssertEqual(output.status, 0, "SIGTERM is a service's normal stop: \(output.stderr)")
        let refused = output.stderrLines.filter { $0.contains("refuses this worker's claims") }
        XCTAssertEqual(refused, ["yxdownload: jobs.sqlite refuses this worker's claims (SQLite error 19: claims refused by a test); still trying"], output.stderr)
        XCTAssertEqual(output.stderrLines.filter { $0 == "yxdownload: jobs.sqlite takes claims again" }.count, 1, output.stderr)
        assertAllWhole(sources, in: "out")
    }

    /// SQLite opens a store it cannot write for reading only, for good: a worker there would fail every
    /// claim however long it tried (found by a helper's review: it said "still trying"). It does not
    /// start, with or without --exit-when-empty (exit 2, as for a folder it cannot write).
    func testAWorkerRefusesAStoreItCanOnlyRead() async throws {
        let setpriv = "/usr/bin/setpriv"
        try XCTSkipUnless(getuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv), "needs root and setpriv")
        _ = try serveFiles(1, size: { _ in 1_000 })
        let enqueue = try await yxdownload("enqueue", "--queue", queue, "-i", "urls.txt")
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: work.appendingPathComponent(queue + suffix).path) {
            try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: work.appendingPathComponent(queue + suffix).path)
        }
        for extra in [["--exit-when-empty"], []] {
            let worker = try RunningCommand(
                ["--bounding-set=-dac_override,-dac_read_search", "--", RunningCommand.binary.path, "worker", "--queue", queue,
                 "-d", "out", "-q"] + extra,
                in: work, executable: setpriv)
            let stopped = await worker.wait(timeout: 60)
            let output = try XCTUnwrap(stopped, "the worker did not stop")
            XCTAssertEqual(output.status, 2, output.stderr)
            XCTAssertEqual(
                output.stderr,
                "yxdownload: cannot write the queue jobs.sqlite: it could be opened for reading only (check the permissions "
                    + "of the file and of its folder); a worker must write it\n")
        }
    }

    /// A store closed cleanly has no `-wal` and `-shm` files, and SQLite must make them even to read it:
    /// in a folder that cannot be written, the message says so, not only SQLite's "readonly database".
    func testAStoreInAFolderThatCannotBeWrittenSaysWhyItCannotBeOpened() async throws {
        let setpriv = "/usr/bin/setpriv"
        try XCTSkipUnless(getuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv), "needs root and setpriv")
        _ = try serveFiles(1, size: { _ in 1_000 })
        let enqueue = try await yxdownload("enqueue", "--queue", "q/jobs.sqlite", "-i", "urls.txt")
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)
        let folder = work.appendingPathComponent("q", isDirectory: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder.path)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path) }
        let status = try await RunningCommand(
            ["--bounding-set=-dac_override,-dac_read_search", "--", RunningCommand.binary.path, "status", "--queue",
             "q/jobs.sqlite"],
            in: work, executable: setpriv
        ).wait()
        XCTAssertEqual(status.status, 1, status.stderr)
        XCTAssertTrue(status.stderr.hasPrefix("yxdownload: cannot open the queue q/jobs.sqlite: "), status.stderr)
        XCTAssertTrue(
            status.stderr.hasSuffix(" (SQLite makes q/jobs.sqlite-wal and -shm beside the store even to read it, and the "
                + "folder q cannot be written: give this user write access to it)\n"), status.stderr)
    }

    /// A folder given as the store reads as one, not as SQLite's "disk I/O error" (found by a review).
    func testAFolderGivenAsTheStoreIsNamedAsOne() async throws {
        try FileManager.default.createDirectory(at: work.appendingPathComponent("queues"), withIntermediateDirectories: true)
        for command in [["enqueue", "http://127.0.0.1:9/a.bin"], ["worker", "-d", "out", "--exit-when-empty"], ["status"]] {
            let output = try await RunningCommand([command[0], "--queue", "queues"] + command.dropFirst(), in: work).wait()
            XCTAssertEqual(output.status, 1, output.stderr)
            XCTAssertTrue(output.stderr.contains("queues: it names a folder; give the store a file name"), output.stderr)
        }
        let status = try await yxdownload("status", "--queue", "queues")
        XCTAssertEqual(
            status.stderr,
            "yxdownload: cannot open the queue queues: it names a folder; give the store a file name, such as queues/jobs.sqlite\n")
        // `status` of a path that ends with a slash does not advise an enqueue that would refuse it.
        let statusOfSlash = try await yxdownload("status", "--queue", "nothere/")
        XCTAssertEqual(
            statusOfSlash.stderr,
            "yxdownload: cannot open the queue nothere/: it names a folder; give the store a file name, such as nothere/jobs.sqlite\n")
        // A path that ends with a slash names a folder too: no file is made under the folder's name.
        let slash = try await yxdownload("enqueue", "--queue", "new/", "http://127.0.0.1:9/a.bin")
        XCTAssertEqual(slash.status, 1, slash.stderr)
        XCTAssertTrue(slash.stderr.contains("the queue new/: it names a folder; give the store a file name, such as new/jobs.sqlite"), slash.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: work.appendingPathComponent("new").path))
    }

    /// A PostgreSQL store that cannot be reached says why (postgres-nio describes every error with one
    /// generic sentence, which was all the message said: found by a review), without the password.
    func testAPostgresStoreThatCannotBeReachedSaysWhy() async throws {
        let (socket, port) = try loopbackSocket()
        close(socket)  // nothing listens there
        let output = try await yxdownload("status", "--queue", "postgres://bob:hunter2@127.0.0.1:\(port)/db?sslmode=disable")
        XCTAssertEqual(output.status, 1, output.stderr)
        XCTAssertTrue(
            output.stderr.hasPrefix(
                "yxdownload: cannot open the queue postgres://bob:***@127.0.0.1:\(port)/db?sslmode=disable: PostgreSQL: "
                    + "connection error ("), output.stderr)
        XCTAssertTrue(output.stderr.contains("Connection refused"), output.stderr)
        XCTAssertFalse(output.stderr.contains("hunter2"), output.stderr)
        XCTAssertFalse(output.stderr.contains("Generic description"), output.stderr)
    }

    func testAWorkerRefusesAFolderItCannotWrite() async throws {
        let setpriv = "/usr/bin/setpriv"
        try XCTSkipUnless(getuid() == 0 && FileManager.default.isExecutableFile(atPath: setpriv), "needs root and setpriv")
        let locked = work.appendingPathComponent("ro", isDirectory: true)
        try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: locked.path)
        let refused = try await RunningCommand(
            ["--bounding-set=-dac_override,-dac_read_search", "--", RunningCommand.binary.path, "worker", "--queue", queue,
             "-d", "ro", "--exit-when-empty"],
            in: work, executable: setpriv
        ).wait()
        XCTAssertEqual(refused.status, 2, refused.stderr)
        XCTAssertEqual(refused.stderr, "yxdownload: cannot write into ro: Permission denied\n")
    }

    func testThreeWorkersWithRandomKillsFinishEveryFile() async throws {
        let long = ProcessInfo.processInfo.environment["YXQUEUE_LONG_TESTS"] == "1"
        let files = long ? 300 : 60
        let kills = long ? 25 : 4
        // 20 KB to 1.6 MiB, 512 KiB/s per connection (about 8 s for the default 60 files over 12
        // connections): every worker has downloads under way when killed.
        let sources = try serveFiles(
            files, size: { Int64(20_000 + ($0 * 28_657) % 1_700_000) }, bytesPerSecond: 512 << 10)
        let enqueue = try await yxdownload("enqueue", "--queue", queue, "-i", "urls.txt")
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)

        var workers = try (0..<3).map { _ in try startWorker("--exit-when-empty", "-j", "4", "-q") }
        var ended: [CommandOutput] = []
        var killed = 0
        var generator = SystemRandomNumberGenerator()
        while killed < kills {
            try await Task.sleep(nanoseconds: UInt64.random(in: 300_000_000...900_000_000, using: &generator))
            let index = Int.random(in: 0..<workers.count, using: &generator)
            let victim = workers[index]
            victim.send(SIGKILL)
            let output = await victim.wait()
            if output.status != 128 + SIGKILL {
                ended.append(output)  // it had already exited: the queue ran dry
                break
            }
            killed += 1
            workers[index] = try startWorker("--exit-when-empty", "-j", "4", "-q")
        }
        // The kills are done: the rest at full speed.
        await server.liftPace()
        for worker in workers {
            let finished = await worker.wait(timeout: long ? 600 : 120)
            let output = try XCTUnwrap(finished, "a worker did not exit")
            ended.append(output)
        }
        XCTAssertGreaterThan(killed, 0, "no worker was killed while it worked")
        for output in ended { XCTAssertEqual(output.status, 0, output.stderr) }
        assertAllWhole(sources, in: "out")
        let status = try await status()
        XCTAssertEqual(count(status, "succeeded"), files, "\(status)")
        XCTAssertEqual(status["total"] as? Int, files)
        print("DurableCommandTests: \(files) files, 3 workers, \(killed) kills")
    }

    // MARK: - PostgreSQL

    func testEnqueueAndWorkerOnPostgres() async throws {
        guard let url = ProcessInfo.processInfo.environment["YXQUEUE_TEST_POSTGRES_URL"], !url.isEmpty else {
            throw XCTSkip(
                "PostgreSQL not available: set YXQUEUE_TEST_POSTGRES_URL=postgres://user@host:port/database "
                    + "(scripts/test starts one)")
        }
        let schema = "yxd_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(12).lowercased()
        let store = url + (url.contains("?") ? "&" : "?") + "schema=\(schema)"
        let sources = try serveFiles(4, size: { Int64(100_000 * ($0 + 1)) })
        let enqueue = try await yxdownload("enqueue", "--queue", store, "-i", "urls.txt")
        XCTAssertEqual(enqueue.status, 0, enqueue.stderr)
        XCTAssertTrue(enqueue.stdout.contains(": 4 new, 0 already queued"), enqueue.stdout)
        let again = try await yxdownload("enqueue", "--queue", store, "-i", "urls.txt")
        XCTAssertTrue(again.stdout.contains(": 0 new, 4 already queued"), again.stdout)
        // Another download for a queued file: reported, nothing stored (the join check on this store).
        let other = try await yxdownload("enqueue", "--queue", store, server.url("/new.bin").absoluteString, server.url("/x/f0.bin").absoluteString)
        XCTAssertEqual(other.status, 1, other.stderr)
        XCTAssertTrue(other.stderr.contains("f0.bin is already queued (job 1) from \(server.url("/f0.bin"))"), other.stderr)
        let finished = try await startWorker("--exit-when-empty", store: store).wait(timeout: 120)
        let output = try XCTUnwrap(finished)
        XCTAssertEqual(output.status, 0, output.stderr)
        assertAllWhole(sources, in: "out")
        let status = try await status(store)
        XCTAssertEqual(count(status, "succeeded"), 4)
        XCTAssertFalse((status["queue"] as? String ?? "").isEmpty)
    }
}
