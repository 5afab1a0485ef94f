import Foundation
import InMemoryLogging
import Logging
import MetricsTestKit
import XCTest
import YXQueue
import YXTestServer

@testable import YXDownload

/// The `Downloader`: typed results, a handle with byte progress, cancellation that keeps the `.part`,
/// a dispatcher of the user's, shutdown and release that end every thread, logs and metrics.
final class DownloaderTests: DownloadTestCase {
    /// Short back-off, no digest by default.
    private func configuration(transfers: Int = 4, idle: TimeInterval = TransferEngine.defaultIdleTimeout)
        -> Downloader.Configuration
    {
        var configuration = Downloader.Configuration(
            name: "test", maxConcurrentTransfers: transfers, laneIdleTimeout: idle, defaultOptions: fastOptions())
        configuration.defaultOptions.computeSHA256 = true
        return configuration
    }

    private func partSize(_ name: String) -> Int64 {
        let path = directory.appendingPathComponent(name + ".part").path
        return ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int64) ?? 0
    }

    func testDownloadReturnsATypedResult() async throws {
        server.serve("/a.bin", Resource(.generated(size: 300_000, seed: 1)))
        let downloader = Downloader(configuration: configuration())
        let result = try await downloader.download(server.url("/a.bin"), into: directory)
        XCTAssertEqual(result.outcome, .downloaded)
        XCTAssertEqual(result.file.lastPathComponent, "a.bin")
        XCTAssertEqual(result.bytes, 300_000)
        XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: 300_000, seed: 1))

        let expected = try XCTUnwrap(
            Checksum(algorithm: .sha256, hex: GeneratedContent.sha256(size: 300_000, seed: 1)))
        let copy = try await downloader.download(
            server.url("/a.bin"), to: directory.appendingPathComponent("sub/copy.bin"), checksum: expected)
        XCTAssertEqual(copy.file.path, directory.appendingPathComponent("sub/copy.bin").path)

        let again = try await downloader.download(server.url("/a.bin"), into: directory)
        XCTAssertEqual(again.outcome, .skippedExisting)
        XCTAssertEqual(server.requests(to: "/a.bin").count, 2)
    }

    func testAFailureIsADownloadError() async throws {
        let downloader = Downloader(configuration: configuration())
        do {
            _ = try await downloader.download(server.url("/missing"), into: directory)
            XCTFail("a 404 must fail")
        } catch let error as DownloadError {
            XCTAssertEqual(error.httpStatus, 404)
        }
    }

    /// The handle's progress updates: each differs from the one before, bytes never go back, the last one
    /// is the whole file; the value is the typed result.
    func testAHandleReportsByteProgressThenItsValue() async throws {
        let size: Int64 = 1 << 20
        server.serve("/paced.bin", Resource(.generated(size: size, seed: 2), bytesPerSecond: 4 << 20))
        let downloader = Downloader(configuration: configuration())
        let handle = downloader.start(server.url("/paced.bin"), into: directory)
        var updates: [DownloadProgress] = []
        for await progress in handle.progressUpdates(every: .milliseconds(20)) { updates.append(progress) }
        let result = try await handle.value
        XCTAssertEqual(result.bytes, size)
        XCTAssertEqual(handle.result, result)
        XCTAssertEqual(handle.state, .finished)
        XCTAssertFalse(updates.isEmpty)
        for (previous, next) in zip(updates, updates.dropFirst()) {
            XCTAssertNotEqual(previous, next, "only changes are reported")
            XCTAssertLessThanOrEqual(previous.bytes, next.bytes, "bytes never go back")
        }
        XCTAssertEqual(updates.last?.bytes, size)
        XCTAssertEqual(updates.last?.total, size)
        XCTAssertEqual(updates.last?.fraction, 1)
        XCTAssertEqual(handle.progress.bytes, size)
    }

    /// With an interval longer than the download, the sequence is the first snapshot and the last one:
    /// updates are throttled, never one per packet.
    func testProgressUpdatesAreThrottledToTheInterval() async throws {
        let size: Int64 = 1 << 20
        server.serve("/paced.bin", Resource(.generated(size: size, seed: 3), bytesPerSecond: 4 << 20))
        let downloader = Downloader(configuration: configuration())
        let handle = downloader.start(server.url("/paced.bin"), into: directory)
        var updates: [DownloadProgress] = []
        for await progress in handle.progressUpdates(every: .seconds(600)) { updates.append(progress) }
        XCTAssertLessThanOrEqual(updates.count, 2, "\(updates)")
        XCTAssertEqual(updates.last?.bytes, size)
        // A download that has ended: its last figures, then the end.
        var late: [DownloadProgress] = []
        for await progress in handle.progressUpdates() { late.append(progress) }
        XCTAssertEqual(late.map(\.bytes), [size])
    }

    /// Cancelling the awaiting task cancels the download; its `.part` stays and the next download of the
    /// file resumes it.
    func testCancellingTheTaskCancelsTheDownloadAndKeepsThePart() async throws {
        let size: Int64 = 2 << 20
        server.serve("/slow.bin", Resource(.generated(size: size, seed: 4), etag: "v1", bytesPerSecond: 100_000))
        let downloader = Downloader(configuration: configuration())
        let url = server.url("/slow.bin")
        let folder: URL = directory
        let task = Task { try await downloader.download(url, into: folder) }
        try await waitUntil("bytes in slow.bin.part") { partSize("slow.bin") > 0 }
        task.cancel()
        do {
            _ = try await task.value
            XCTFail("a canceled download must throw")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        XCTAssertGreaterThan(partSize("slow.bin"), 0, "the .part stays")
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.appendingPathComponent("slow.bin").path))

        server.serve("/slow.bin", Resource(.generated(size: size, seed: 4), etag: "v1"))
        let result = try await downloader.download(server.url("/slow.bin"), into: directory)
        XCTAssertGreaterThan(result.resumedFrom, 0)
        XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: size, seed: 4))
    }

    /// `shutdown()` cancels running downloads (their `.part` stays), returns with no engine thread left,
    /// and refuses later downloads; it is idempotent.
    func testShutdownCancelsDownloadsKeepsTheirPartsAndEndsTheThreads() async throws {
        server.serve("/slow.bin", Resource(.generated(size: 2 << 20, seed: 5), etag: "v1", bytesPerSecond: 100_000))
        server.serve("/other.bin", Resource(.generated(size: 1_000, seed: 6)))
        let downloader = Downloader(configuration: configuration(idle: 600))
        let handle = downloader.start(server.url("/slow.bin"), into: directory)
        try await waitUntil("bytes in slow.bin.part") { partSize("slow.bin") > 0 }
        XCTAssertGreaterThan(downloader.engine.runningLaneThreads, 0)

        downloader.shutdown()
        XCTAssertTrue(downloader.isShutDown)
        XCTAssertEqual(downloader.engine.runningLaneThreads, 0, "shutdown returns once the lanes' threads ended")
        do {
            _ = try await handle.value
            XCTFail("a download canceled by shutdown must throw")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        XCTAssertEqual(handle.state, .canceled)
        XCTAssertGreaterThan(partSize("slow.bin"), 0, "the .part stays")

        do {
            _ = try await downloader.download(server.url("/other.bin"), into: directory)
            XCTFail("a shut-down downloader starts nothing")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        let late = downloader.start(server.url("/other.bin"), into: directory)
        do {
            _ = try await late.value
            XCTFail("a shut-down downloader starts nothing")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        downloader.shutdown()  // again: nothing happens
        XCTAssertTrue(server.requests(to: "/other.bin").isEmpty)
    }

    /// Releasing a downloader shuts it down: its downloads are canceled and its engine's threads end.
    func testReleasingTheDownloaderCancelsItsDownloads() async throws {
        server.serve("/slow.bin", Resource(.generated(size: 2 << 20, seed: 7), etag: "v1", bytesPerSecond: 100_000))
        var downloader: Downloader? = Downloader(configuration: configuration(idle: 600))
        let job = try XCTUnwrap(downloader?.start(server.url("/slow.bin"), into: directory).job)
        let engine = job.engine
        try await waitUntil("bytes in slow.bin.part") { partSize("slow.bin") > 0 }
        downloader = nil
        XCTAssertEqual(engine.runningLaneThreads, 0)
        do {
            _ = try await job.value
            XCTFail("the download of a released downloader is canceled")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        XCTAssertGreaterThan(partSize("slow.bin"), 0)
    }

    /// A downloader on a dispatcher of the user's sets the download queues' limits on it, and its
    /// `cancelAll()` cancels its downloads only.
    func testADownloaderOnAGivenDispatcher() async throws {
        struct Waits: JobDefinition {
            var work: JobWork<Int> {
                .run(on: "cpu") { _ in
                    try await Task.sleep(for: .seconds(600))
                    return 0
                }
            }
        }
        server.serve("/slow.bin", Resource(.generated(size: 2 << 20, seed: 8), bytesPerSecond: 100_000))
        let shared = Dispatcher(name: "app", queues: ["cpu": 2])
        let downloader = Downloader(configuration: configuration(transfers: 3), dispatcher: shared)
        XCTAssertTrue(downloader.dispatcher === shared)
        XCTAssertEqual(shared.limit(for: DownloadQueue.transfer), 3)
        XCTAssertEqual(shared.limit(for: "cpu"), 2)
        downloader.setMaxConcurrentTransfers(5)
        XCTAssertEqual(shared.limit(for: DownloadQueue.transfer), 5)

        let other = shared.start(Waits())
        let handle = downloader.start(server.url("/slow.bin"), into: directory)
        try await waitUntil("both jobs executing") { other.state == .executing && partSize("slow.bin") > 0 }
        downloader.cancelAll()
        do {
            _ = try await handle.value
            XCTFail("canceled")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        XCTAssertEqual(other.state, .executing, "another job of the dispatcher goes on")
        other.cancel()
        await shared.waitForAllJobs()
    }

    /// Many downloaders, shut down or released: no thread of theirs is left.
    func testManyDownloadersLeaveNoThreadBehind() async throws {
        server.serve("/t.bin", Resource(.generated(size: 20_000, seed: 9)))
        let threadsBefore = ProcessThreads.count
        let lanesBefore = ProcessThreads.lanes
        let count = 40
        var peakLanes = 0
        var peakThreads = 0
        for index in 0..<count {
            let downloader = Downloader(configuration: configuration(idle: 600))
            _ = try await downloader.download(server.url("/t.bin"), to: directory.appendingPathComponent("t\(index)"))
            peakLanes = max(peakLanes, ProcessThreads.lanes)
            peakThreads = max(peakThreads, ProcessThreads.count)
            if index.isMultiple(of: 2) { downloader.shutdown() }  // the others shut down when released
        }
        if ProcessThreads.isAvailable {
            XCTAssertGreaterThan(peakLanes, lanesBefore, "a downloading downloader has a lane thread")
            try await waitUntil("the downloaders' lane threads to leave the process") { ProcessThreads.lanes <= lanesBefore }
            let threadsAfter = ProcessThreads.count
            print(
                "threads: \(threadsBefore) before \(count) downloaders, at most \(peakThreads) while one downloaded, "
                    + "\(threadsAfter) after (lane threads \(lanesBefore), at most \(peakLanes), then \(ProcessThreads.lanes))")
            XCTAssertLessThan(threadsAfter - threadsBefore, count, "no thread per downloader is left")
        }
    }

    /// Requests at trace, retries and resumes at info, failures at warning; the byte and retry counters.
    func testLogsAndMetrics() async throws {
        let size: Int64 = 300_000
        server.serve(
            "/r.bin",
            Resource(.generated(size: size, seed: 10), etag: "v1", failures: [.status(503), .dropAfter(bytes: 100_000)]))
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "test", factory: { _ in handler })
        logger.logLevel = .trace
        let metrics = TestMetrics()
        var configuration = configuration()
        configuration.name = "observed"
        configuration.defaultOptions.retryPolicy.retries = 1
        let downloader = Downloader(configuration: configuration, logger: logger, metricsFactory: metrics)

        // A 503 (retried), then a connection cut after 100,000 bytes: the retry is used up, the download
        // fails and keeps its .part.
        let first = downloader.start(server.url("/r.bin"), into: directory)
        do {
            _ = try await first.value
            XCTFail("the second failure is past the retries")
        } catch {
            XCTAssertTrue(error is DownloadError, "\(error)")
        }
        let firstBytes = first.progress.bytesReceived
        XCTAssertGreaterThan(firstBytes, 0)
        // The next download resumes the .part.
        let result = try await downloader.download(server.url("/r.bin"), into: directory)
        XCTAssertEqual(result.resumedFrom, firstBytes)

        let entries = handler.entries
        func lines(_ message: String) -> [InMemoryLogHandler.Entry] { entries.filter { $0.message.description == message } }
        XCTAssertEqual(lines("request").count, server.requests(to: "/r.bin").count)
        XCTAssertTrue(lines("request").allSatisfy { $0.level == .trace })
        XCTAssertEqual(lines("request").first?.metadata["url"], "\(server.url("/r.bin"))")
        XCTAssertEqual(lines("request").first?.metadata["downloader"], "observed")
        XCTAssertEqual(lines("retrying").count, 1)
        XCTAssertEqual(lines("retrying").first?.level, .info)
        XCTAssertEqual(lines("resuming").count, 1)
        XCTAssertEqual(lines("resuming").first?.level, .info)
        XCTAssertEqual(lines("resuming").first?.metadata["bytes"], "\(firstBytes)")
        XCTAssertEqual(lines("download failed").count, 1)
        XCTAssertEqual(lines("download failed").first?.level, .warning)
        // Each response's status at trace, and the rename at debug.
        XCTAssertEqual(lines("response").map { $0.metadata["status"] }, ["503", "200", "206"])
        XCTAssertTrue(lines("response").allSatisfy { $0.level == .trace })
        XCTAssertEqual(lines("renamed").count, 1)
        XCTAssertEqual(lines("renamed").first?.level, .debug)
        XCTAssertEqual(lines("renamed").first?.metadata["to"], "\(result.file.path)")
        XCTAssertTrue(entries.allSatisfy { !$0.message.description.hasPrefix("curl ") }, "curl's own lines only when asked")
        // The dispatcher the downloader made logs with the same logger.
        XCTAssertEqual(lines("job failed").count, 1)

        let dimensions = [("downloader", "observed")]
        XCTAssertEqual(metrics.counterTotal(label: "yxdownload.bytes", dimensions: dimensions), firstBytes + result.bytesReceived)
        XCTAssertEqual(firstBytes + result.bytesReceived, size)
        XCTAssertEqual(metrics.counterTotal(label: "yxdownload.retries", dimensions: dimensions), 1)
        XCTAssertEqual(
            metrics.counterTotal(label: "yxqueue.jobs.finished", dimensions: [("dispatcher", "observed"), ("job", "download")]), 1)
    }
}
