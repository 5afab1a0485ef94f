import Foundation
import XCTest
@_spi(YXQueueInternals) import YXQueue
import YXTestServer

@testable import YXDownload

/// Which operations a download is made of, and that the short form (the probe fetches, verifies and
/// renames on its own) keeps every promise of the long one (probe → parts → finalize).
final class DownloadOperationGraphTests: DownloadTestCase {
    /// No digest over the file and no flush before the rename: the probe finalizes by itself.
    private func quickOptions(retries: Int = 5) -> DownloadOptions {
        var options = fastOptions(retries: retries)
        options.computeSHA256 = false
        options.syncBeforeRename = false
        return options
    }

    /// Runs `job` and returns its result with the names of the operations of its last attempt.
    private func runCounting(_ job: DownloadJob) async -> (Result<DownloadResult, any Error>, [String]) {
        let result = await run(job)
        let operations = job.manager?.operations ?? []
        return (result, operations.map { String(describing: type(of: $0)) })
    }

    func testAOneStreamDownloadWithQuickFinalizeIsOneOperation() async throws {
        let size: Int64 = 1 << 20
        server.serve("/one.bin", Resource(.generated(size: size, seed: 31), etag: "v1"))
        let (result, operations) = await runCounting(makeJob("/one.bin", options: quickOptions()))
        let value = try result.get()
        XCTAssertEqual(operations, ["ProbeOperation"])
        XCTAssertEqual(value.outcome, .downloaded)
        XCTAssertEqual(value.bytes, size)
        XCTAssertNil(value.sha256, "no digest was asked for")
        XCTAssertEqual(try sha256(of: value.file), GeneratedContent.sha256(size: size, seed: 31))
        XCTAssertEqual(files(), ["one.bin"], "no .part and no sidecar left")
    }

    /// A digest is computed in the one step (off the transfer thread); a flush to disk follows one
    /// stream in a step of its own, on the finalize queue, so that the transfer slot is free meanwhile.
    func testADigestIsOneOperationAndAFlushGetsAFinalizeStep() async throws {
        server.serve("/two.bin", Resource(.generated(size: 50_000, seed: 32)))
        var withDigest = quickOptions()
        withDigest.computeSHA256 = true
        let (digested, first) = await runCounting(makeJob("/two.bin", file: "a.bin", options: withDigest))
        XCTAssertEqual(first, ["ProbeOperation"], "the digest is computed in the step, off the transfer thread")
        XCTAssertEqual(try digested.get().sha256, GeneratedContent.sha256(size: 50_000, seed: 32))

        var withFlush = quickOptions()
        withFlush.syncBeforeRename = true
        let (flushed, second) = await runCounting(makeJob("/two.bin", file: "b.bin", options: withFlush))
        XCTAssertEqual(second, ["ProbeOperation", "FinalizeOperation"])
        XCTAssertEqual(try flushed.get().outcome, .downloaded)
        XCTAssertEqual(try flushed.get().bytes, 50_000)

        let checksum = try XCTUnwrap(Checksum(algorithm: .sha256, hex: GeneratedContent.sha256(size: 50_000, seed: 32)))
        let (checked, third) = await runCounting(makeJob("/two.bin", file: "c.bin", checksum: checksum, options: quickOptions()))
        XCTAssertEqual(third, ["ProbeOperation"])
        XCTAssertEqual(try checked.get().outcome, .downloaded)
        XCTAssertEqual(server.requests(to: "/two.bin").count, 3, "one request each")

        var both = withFlush
        both.computeSHA256 = true
        let (flushedAndDigested, fourth) = await runCounting(makeJob("/two.bin", file: "e.bin", options: both))
        XCTAssertEqual(fourth, ["ProbeOperation", "FinalizeOperation"], "the finalize step computes the digest off the transfer thread")
        XCTAssertEqual(try flushedAndDigested.get().sha256, GeneratedContent.sha256(size: 50_000, seed: 32))

        // A wrong checksum still deletes the .part and fails.
        let wrong = try XCTUnwrap(Checksum(algorithm: .sha256, hex: String(repeating: "0", count: 64)))
        let mismatch = downloadError(await run(makeJob("/two.bin", file: "d.bin", checksum: wrong, options: quickOptions())))
        XCTAssertEqual(mismatch?.kind, .checksumMismatch)
        XCTAssertEqual(files(), ["a.bin", "b.bin", "c.bin", "e.bin"])
    }

    /// A one-stream download that must be flushed before its rename gives its transfer slot to the next
    /// download once its bytes are in: with one transfer slot, and the finalize queue held by another
    /// job, the second download is fetched while the first one waits to be finalized.
    func testAOneStreamDownloadGivesItsSlotAwayOnceItsBytesAreIn() async throws {
        dispatcher.setLimit(1, for: DownloadQueue.probe)
        dispatcher.setLimit(1, for: DownloadQueue.transfer)
        dispatcher.setLimit(1, for: DownloadQueue.finalize)
        server.serve("/first.bin", Resource(.generated(size: 300_000, seed: 36)))
        server.serve("/second.bin", Resource(.generated(size: 1_000, seed: 37)))
        let release = DispatchSemaphore(value: 0)
        let holder = dispatcher.start(HoldAQueue(queue: DownloadQueue.finalize, release: release))
        try await waitUntil("the finalize slot is held") { dispatcher.load(of: DownloadQueue.finalize).running == 1 }
        var options = quickOptions()
        options.syncBeforeRename = true
        let first = makeJob("/first.bin", options: options)
        let second = makeJob("/second.bin", options: options)
        first.start(on: dispatcher)
        try await waitUntil("the first download's bytes are in") {
            dispatcher.load(of: DownloadQueue.finalize).waiting == 1
        }
        second.start(on: dispatcher)
        try await waitUntil("the second download is fetched too") {
            dispatcher.load(of: DownloadQueue.finalize).waiting == 2
        }
        XCTAssertEqual(server.requests(to: "/second.bin").count, 1)
        XCTAssertEqual(first.state, .executing, "the first download is not finished: it waits to be flushed")
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.appendingPathComponent("first.bin").path))
        release.signal()
        _ = try await holder.value
        let firstResult = try await first.value
        let secondResult = try await second.value
        XCTAssertEqual(try sha256(of: try XCTUnwrap(firstResult as? DownloadResult).file), GeneratedContent.sha256(size: 300_000, seed: 36))
        XCTAssertEqual(try sha256(of: try XCTUnwrap(secondResult as? DownloadResult).file), GeneratedContent.sha256(size: 1_000, seed: 37))
        XCTAssertEqual(files(), ["first.bin", "second.bin"], "no .part left")
    }

    /// A one-stream download with nothing left after its transfer but a length check and a rename (no
    /// digest, no flush: `--no-sync`) gives its transfer slot away as the transfer ends, so the next
    /// download's request leaves before the first download ends. The first one's end is observed where it
    /// happens, on the transfer thread (its callback queue is a `DirectQueue`), and waits there for the
    /// server to see the second request: had the first kept its slot to its end, the second could only
    /// start after that callback returned, and its request would leave from this blocked thread. (The wait
    /// bounds only a failure.)
    func testADownloadWithNothingLeftToFlushGivesItsSlotAwayBeforeItEnds() async throws {
        dispatcher.setLimit(1, for: DownloadQueue.probe)
        dispatcher.setLimit(1, for: DownloadQueue.transfer)
        server.serve("/first.bin", Resource(.generated(size: 20_000, seed: 38)))
        server.serve("/second.bin", Resource(.generated(size: 1_000, seed: 39)))
        let events = DirectQueue(label: "test.events")
        let jobs = ["first.bin", "second.bin"].map { name in
            DownloadJob(
                url: server.url("/\(name)"), to: directory.appendingPathComponent(name), checksum: nil,
                options: quickOptions(), engine: engine, callbackQueue: events.queue)
        }
        let seen = Locked<(onTransferThread: Bool, secondRequested: Bool)?>(nil)
        let loopback = try XCTUnwrap(server)
        let token = jobs[0].onFinish { _, _ in
            let onTransferThread = TransferLane.current != nil
            let deadline = Date() + 10
            while loopback.requests(to: "/second.bin").isEmpty && Date() < deadline { usleep(1_000) }
            seen.withLock { $0 = (onTransferThread, !loopback.requests(to: "/second.bin").isEmpty) }
        }
        for job in jobs { job.start(on: dispatcher) }
        let firstValue = try await jobs[0].value
        let secondValue = try await jobs[1].value
        let first = try XCTUnwrap(firstValue as? DownloadResult)
        let second = try XCTUnwrap(secondValue as? DownloadResult)
        withExtendedLifetime(token) {}
        let observed = try XCTUnwrap(seen.withLock { $0 }, "the first download's end was observed")
        XCTAssertTrue(observed.onTransferThread, "delivered where the transfer ended")
        XCTAssertTrue(observed.secondRequested, "the second request left before the first download ended")
        XCTAssertEqual(try sha256(of: first.file), GeneratedContent.sha256(size: 20_000, seed: 38))
        XCTAssertEqual(try sha256(of: second.file), GeneratedContent.sha256(size: 1_000, seed: 39))
        XCTAssertEqual(files(), ["first.bin", "second.bin"], "no .part left")
    }

    /// `onSaving` says when a download's bytes are in and only the flush and the rename remain: once per
    /// attempt, before the final name exists, for one stream and for parts; never without the flush.
    func testOnSavingIsCalledOnceBeforeTheFlushAndNeverWithoutOne() async throws {
        server.serve("/saved.bin", Resource(.generated(size: 200_000, seed: 38), etag: "v1"))
        var flushed = quickOptions()
        flushed.syncBeforeRename = true
        var segmented = flushed
        segmented.connections = 4
        for (file, options, expected) in [("one.bin", flushed, 1), ("parts.bin", segmented, 1), ("quick.bin", quickOptions(), 0)] {
            let seen = Locked<[(named: Bool, part: Bool, progress: DownloadProgress)]>([])
            let job = makeJob("/saved.bin", file: file, options: options)
            let final = job.destination.path
            job.onSaving = { progress in
                let named = FileManager.default.fileExists(atPath: final)
                let part = FileManager.default.fileExists(atPath: final + ".part")
                seen.withLock { $0.append((named, part, progress)) }
            }
            let result = try await run(job).get()
            XCTAssertEqual(try sha256(of: result.file), GeneratedContent.sha256(size: 200_000, seed: 38), file)
            let calls = seen.withLock { $0 }
            XCTAssertEqual(calls.count, expected, file)
            for call in calls {
                XCTAssertFalse(call.named, "\(file): called before the final name exists")
                XCTAssertTrue(call.part, "\(file): the .part holds the bytes")
                XCTAssertEqual(call.progress.bytes, 200_000, "\(file): all its bytes")
                XCTAssertEqual(call.progress.total, 200_000, file)
            }
        }
    }

    /// A large file that is flushed before its rename is flushed ahead too, every 32 MiB while its bytes
    /// arrive, so that the last flush finds little left; never with `--no-sync`. Both files are whole.
    func testALargeFileIsFlushedAheadOfItsEndOnlyWhenItIsFlushedAtAll() async throws {
        let size: Int64 = 40 << 20
        server.serve("/large.bin", Resource(.generated(size: size, seed: 39), etag: "v1"))
        var flushed = quickOptions()
        flushed.syncBeforeRename = true
        let durable = try await run(makeJob("/large.bin", file: "durable.bin", options: flushed)).get()
        XCTAssertEqual(try sha256(of: durable.file), GeneratedContent.sha256(size: size, seed: 39))
        XCTAssertEqual(engine.diskSync.flushesAhead.load(ordering: .relaxed), 1, "one flush at 32 MiB of 40")

        let quick = try await run(makeJob("/large.bin", file: "quick.bin", options: quickOptions())).get()
        XCTAssertEqual(try sha256(of: quick.file), GeneratedContent.sha256(size: size, seed: 39))
        XCTAssertEqual(engine.diskSync.flushesAhead.load(ordering: .relaxed), 1, "none without the flush")
        XCTAssertEqual(files(), ["durable.bin", "quick.bin"])
    }

    func testSegmentedDownloadsStillGetPartsAndAFinalizeStep() async throws {
        let size: Int64 = 1 << 20
        server.serve("/seg.bin", Resource(.generated(size: size, seed: 33), etag: "v1"))
        var options = quickOptions()
        options.connections = 4
        let (result, operations) = await runCounting(makeJob("/seg.bin", options: options))
        XCTAssertEqual(try sha256(of: try result.get().file), GeneratedContent.sha256(size: size, seed: 33))
        XCTAssertEqual(operations.first, "ProbeOperation")
        XCTAssertEqual(operations.last, "FinalizeOperation")
        XCTAssertEqual(operations.filter { $0 == "PartOperation" }.count, 4)
    }

    func testQuickFinalizeResumesSkipsAndFinalizesACompletePart() async throws {
        let size: Int64 = 600_000
        // A dropped connection and no retry: the .part stays, no final name.
        server.serve("/q.bin", Resource(.generated(size: size, seed: 34), etag: "v1", failures: [.dropAfter(bytes: 200_000)]))
        let dropped = downloadError(await run(makeJob("/q.bin", options: quickOptions(retries: 0))))
        XCTAssertEqual(dropped?.kind, .partialBody)
        assertResumableOneStream("q.bin")

        // The next run resumes it, with one operation.
        server.serve("/q.bin", Resource(.generated(size: size, seed: 34), etag: "v1"))
        let (resumed, operations) = await runCounting(makeJob("/q.bin", options: quickOptions()))
        XCTAssertEqual(operations, ["ProbeOperation"])
        XCTAssertGreaterThan(try resumed.get().resumedFrom, 0)
        XCTAssertEqual(try sha256(of: try resumed.get().file), GeneratedContent.sha256(size: size, seed: 34))
        XCTAssertEqual(files(), ["q.bin"])

        // An existing final file is skipped without a request.
        server.resetCounters()
        let (skipped, skipOperations) = await runCounting(makeJob("/q.bin", options: quickOptions()))
        XCTAssertEqual(try skipped.get().outcome, .skippedExisting)
        XCTAssertEqual(skipOperations, ["ProbeOperation"])
        XCTAssertEqual(server.requests(to: "/q.bin").count, 0)

        // A whole .part whose rename never happened is renamed without a request.
        let final = directory.appendingPathComponent("q.bin")
        try FileManager.default.moveItem(at: final, to: directory.appendingPathComponent("q.bin.part"))
        let state = ResumeState(url: server.url("/q.bin").absoluteString, etag: "\"v1\"", total: size, segments: [
            .init(start: 0, end: size - 1, done: size)
        ])
        try state.save(to: directory.appendingPathComponent("q.bin.part.meta"))
        let (finalized, finalizeOperations) = await runCounting(makeJob("/q.bin", options: quickOptions()))
        XCTAssertEqual(try finalized.get().outcome, .finalizedPart)
        XCTAssertEqual(finalizeOperations, ["ProbeOperation"])
        XCTAssertEqual(server.requests(to: "/q.bin").count, 0)
        XCTAssertEqual(files(), ["q.bin"])
    }

    func testQuickFinalizeNeverRenamesAShortBody() async throws {
        server.serve("/short.bin", Resource(.generated(size: 100_000, seed: 35), failures: Array(repeating: .shortBody(missing: 10), count: 10)))
        let short = downloadError(await run(makeJob("/short.bin", options: quickOptions(retries: 1))))
        XCTAssertEqual(short?.kind, .partialBody)
        XCTAssertFalse(files().contains("short.bin"))
    }
}

/// A job that holds a slot of `queue` until `release` is signaled.
private struct HoldAQueue: JobDefinition {
    let queue: String
    let release: DispatchSemaphore

    var work: JobWork<Int> {
        .run(on: queue) { [release] _ in
            release.wait()
            return 0
        }
    }
}
