import Foundation
import XCTest
import YXQueue
import YXTestServer

@testable import YXDownload

/// `keepsSlotWhileWaiting` (a waiting download keeps its transfer slot) and the fresh-destination hint
/// (the `.part` is created without looking for the three files first).
final class SlotAndDiskHintTests: DownloadTestCase {
    private func waitingOptions(keepsSlot: Bool) -> DownloadOptions {
        var options = fastOptions()
        options.retryPolicy = RetryPolicy(retries: 2, initialDelay: 0.3, maxDelay: 0.3, jitter: 0)
        options.keepsSlotWhileWaiting = keepsSlot
        return options
    }

    /// One slot; the first download gets a 503, waits, and succeeds. With the option, the second one's
    /// request comes after the first one's last request; without it, during the first one's wait.
    func testAWaitingDownloadKeepsItsSlotOnlyWhenAsked() async throws {
        limitTransfers(1)
        for keepsSlot in [true, false] {
            server.serve("/flaky.bin", Resource(.generated(size: 10_000, seed: 1), failures: [.status(503)]))
            server.serve("/next.bin", Resource(.generated(size: 10_000, seed: 2)))
            server.resetCounters()
            let options = waitingOptions(keepsSlot: keepsSlot)
            let first = makeJob("/flaky.bin", file: "flaky-\(keepsSlot).bin", options: options)
            let second = makeJob("/next.bin", file: "next-\(keepsSlot).bin", options: options)
            first.start(on: dispatcher)
            second.start(on: dispatcher)
            _ = try await first.value
            _ = try await second.value
            let flaky = server.requests(to: "/flaky.bin").map(\.receivedAt)
            let next = try XCTUnwrap(server.requests(to: "/next.bin").first?.receivedAt)
            XCTAssertEqual(flaky.count, 2)
            if keepsSlot {
                XCTAssertGreaterThan(next, flaky[1], "the second download waited for the first one's end")
                // The flush before the rename is a step of its own after the transfer.
                XCTAssertEqual(
                    first.manager?.operations.filter { !($0 is FinalizeOperation) }.count, 1,
                    "the retry happened inside the one transfer step")
            } else {
                XCTAssertLessThan(next, flaky[1], "the second download ran while the first one waited")
            }
        }
    }

    func testCancelEndsAWaitInPlaceAtOnce() async throws {
        server.serve("/busy.bin", Resource(.generated(size: 10_000, seed: 3), failures: [.status(503)]))
        var options = waitingOptions(keepsSlot: true)
        options.retryPolicy = RetryPolicy(retries: 2, initialDelay: 600, maxDelay: 600, jitter: 0)
        let job = makeJob("/busy.bin", options: options)
        job.start(on: dispatcher)
        try await waitUntil("the first response") { server.requests(to: "/busy.bin").count == 1 }
        try await waitUntil("the retry's wait") { job.state == .executing && server.requests(to: "/busy.bin").count == 1 }
        let began = Date()
        job.cancel()
        do {
            _ = try await job.value
            XCTFail("canceled")
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)")
        }
        XCTAssertLessThan(Date().timeIntervalSince(began), 10, "not the 600 s back-off")
        XCTAssertEqual(job.state, .canceled)
        // Nothing arrived: no empty `.part`, nor its sidecar, is left to resume (found by a review).
        XCTAssertEqual(files(), [])
    }

    private func freshJob(_ path: String, file: String) -> DownloadJob {
        DownloadJob(
            url: server.url(path), toPath: directory.appendingPathComponent(file).path, checksum: nil, options: fastOptions(),
            engine: engine, callbackQueue: .global(), destinationIsFresh: true)
    }

    func testAFreshDestinationDownloadsIntoAFolderItCreates() async throws {
        server.serve("/f.bin", Resource(.generated(size: 50_000, seed: 4)))
        let job = DownloadJob(
            url: server.url("/f.bin"), toPath: directory.appendingPathComponent("new/folder/f.bin").path, checksum: nil,
            options: fastOptions(), engine: engine, callbackQueue: .global(), destinationIsFresh: true)
        let result = try await run(job).get()
        XCTAssertEqual(result.outcome, .downloaded)
        XCTAssertEqual(try sha256(of: result.file), GeneratedContent.sha256(size: 50_000, seed: 4))
        XCTAssertEqual(files(in: directory.appendingPathComponent("new/folder")), ["f.bin"])
    }

    /// A `.part` that appeared after the maker looked (another run, say) is never overwritten. With an
    /// unnamed `.part` (Linux) it is left alone and the file is downloaded whole; otherwise it is resumed.
    func testAPartThatAppearedMeanwhileIsNotOverwritten() async throws {
        let size: Int64 = 300_000
        server.serve("/r.bin", Resource(.generated(size: size, seed: 5), etag: "v1", failures: [.dropAfter(bytes: 100_000)]))
        var noRetry = fastOptions(retries: 0)
        noRetry.computeSHA256 = false
        _ = downloadError(await run(makeJob("/r.bin", options: noRetry)))
        assertResumableOneStream("r.bin")
        let part = directory.appendingPathComponent("r.bin.part")
        let kept = try Data(contentsOf: part)

        server.serve("/r.bin", Resource(.generated(size: size, seed: 5), etag: "v1"))
        let result = try await run(freshJob("/r.bin", file: "r.bin")).get()
        XCTAssertEqual(try sha256(of: result.file), GeneratedContent.sha256(size: size, seed: 5))
        if DownloadSession.canNameUnnamedFiles {
            XCTAssertEqual(result.resumedFrom, 0)
            XCTAssertNil(server.requests(to: "/r.bin").last?.header("Range"))
            XCTAssertEqual(try Data(contentsOf: part), kept, "the other run's .part is left as it was")
        } else {
            XCTAssertEqual(result.resumedFrom, 100_000, "the hint was wrong: the disk decided")
            XCTAssertEqual(server.requests(to: "/r.bin").last?.header("Range"), "bytes=100000-")
        }
    }
}
