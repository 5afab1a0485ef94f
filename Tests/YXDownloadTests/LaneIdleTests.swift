import Foundation
import XCTest
@_spi(YXQueueInternals) import YXQueue
import YXTestServer

@testable import YXDownload

/// A lane holds a thread only while it has work: the thread ends after the idle timeout and starts again
/// with the next transfer; commands that race the thread's end are never lost.
final class LaneIdleTests: DownloadTestCase {
    /// Counts how each transfer ended, and signals each end.
    private final class EndingHandler: TransferHandler, @unchecked Sendable {
        let ends = Locked<[String]>([])
        let ended = DispatchSemaphore(value: 0)
        func transferDidReceiveResponse(_ response: TransferResponse) -> ResponseVerdict { .proceed }
        func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> DownloadError? { nil }
        func transferDidComplete(_ outcome: TransferOutcome) {
            let word: String
            switch outcome {
            case .success: word = "success"
            case .failure(let error): word = "failure: \(error)"
            case .canceled: word = "canceled"
            }
            ends.withLock { $0.append(word) }
            ended.signal()
        }
    }

    private func request(_ path: String) -> TransferRequest {
        TransferRequest(url: server.url(path), userAgent: "test", connectTimeout: 10, stallTimeout: 20, verifyTLS: true)
    }

    func testAnEngineHoldsNoThreadBeforeItsFirstTransfer() {
        let engine = TransferEngine(lanes: 2)
        XCTAssertEqual(engine.runningLaneThreads, 0)
        XCTAssertEqual(engine.laneThreadStarts, 0)
        engine.setMaxSpeed(bytesPerSecond: 1 << 20)  // a setting starts no thread either
        XCTAssertEqual(engine.laneThreadStarts, 0)
        engine.shutdown()
    }

    /// The thread ends after the idle timeout, its curl handles cleaned up (the next transfer opens a new
    /// connection), and the next transfer starts a new thread.
    func testALaneThreadEndsWhenIdleAndStartsAgainForTheNextTransfer() async throws {
        server.serve("/a", Resource(.generated(size: 50_000, seed: 1)))
        server.serve("/b", Resource(.generated(size: 50_000, seed: 2)))
        engine.shutdown()
        engine = TransferEngine(lanes: 1, idleTimeout: 0.2)
        let lanesBefore = ProcessThreads.lanes

        _ = try await run(makeJob("/a")).get()
        XCTAssertEqual(engine.laneThreadStarts, 1)
        try await waitUntil("the lane's thread to end after 0.2 s idle") { engine.runningLaneThreads == 0 }
        if ProcessThreads.isAvailable {
            try await waitUntil("the lane's thread to leave the process") { ProcessThreads.lanes <= lanesBefore }
        }

        _ = try await run(makeJob("/b")).get()
        XCTAssertEqual(engine.laneThreadStarts, 2, "the next transfer started a new thread")
        XCTAssertEqual(engine.connectionsOpened, 2, "the ended thread's connection was closed with its multi handle")
        XCTAssertEqual(server.connectionCount, 2)
        XCTAssertEqual(try sha256(of: directory.appendingPathComponent("b")), GeneratedContent.sha256(size: 50_000, seed: 2))
    }

    /// Within the idle timeout the thread stays, and its connection is reused.
    func testALaneKeepsItsThreadAndConnectionBetweenCloseTransfers() async throws {
        server.serve("/a", Resource(.generated(size: 10_000, seed: 1)))
        server.serve("/b", Resource(.generated(size: 10_000, seed: 2)))
        engine.shutdown()
        engine = TransferEngine(lanes: 1, idleTimeout: 600)
        _ = try await run(makeJob("/a")).get()
        _ = try await run(makeJob("/b")).get()
        XCTAssertEqual(engine.laneThreadStarts, 1)
        XCTAssertEqual(engine.runningLaneThreads, 1)
        XCTAssertEqual(engine.connectionsOpened, 1)
        if ProcessThreads.isAvailable {
            XCTAssertGreaterThanOrEqual(ProcessThreads.lanes, 1, "the lane's thread, by name: \(ProcessThreads.names)")
        }
    }

    /// With no idle time at all, lanes end whenever they run dry: transfers submitted and canceled from
    /// many threads meet threads that are ending. Each transfer ends exactly once; none is lost.
    func testTransfersAndCancelsRacingTheEndOfTheThreadAreNeverLost() throws {
        server.serve("/s", Resource(.generated(size: 2_000, seed: 3)))
        let engine = TransferEngine(lanes: 2, idleTimeout: 0)
        defer { engine.shutdown() }
        let submitters = 4
        let rounds = 40
        let handlers = (0..<submitters).map { _ in EndingHandler() }
        let ready = DispatchGroup()
        let go = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for index in 0..<submitters {
            ready.enter()
            done.enter()
            Thread.detachNewThread { [request = request("/s")] in
                ready.leave()
                go.wait()
                let handler = handlers[index]
                for round in 0..<rounds {
                    // Spread the commands over the moments a lane takes to run dry and end its thread.
                    usleep(UInt32.random(in: 0...3_000))
                    let transfer = Transfer(request: request, handler: handler)
                    engine.submit(transfer)
                    if (round + index).isMultiple(of: 3) { engine.cancel(transfer) }
                    // Wait for the end, so that the lane runs dry between transfers and may be ending when
                    // the next command arrives.
                    _ = handler.ended.wait(timeout: .now() + 60)
                }
                done.leave()
            }
        }
        ready.wait()
        for _ in 0..<submitters { go.signal() }
        XCTAssertEqual(done.wait(timeout: .now() + 120), .success, "a transfer never ended")
        for handler in handlers {
            let ends = handler.ends.withLock { $0 }
            XCTAssertEqual(ends.count, rounds, "each transfer ends exactly once")
            XCTAssertTrue(ends.allSatisfy { $0 == "success" || $0 == "canceled" }, "\(ends)")
        }
        // Each lane took every command it was given, whatever thread it had at the time.
        XCTAssertGreaterThanOrEqual(engine.laneThreadStarts, 1)
        print("lane threads started for \(submitters * rounds) transfers: \(engine.laneThreadStarts)")
    }

    /// An engine that is released shuts down: its lanes' threads end with it.
    func testAReleasedEngineEndsItsThreads() async throws {
        server.serve("/a", Resource(.generated(size: 10_000, seed: 1)))
        let lanesBefore = ProcessThreads.lanes
        do {
            let engine = TransferEngine(lanes: 2, idleTimeout: 600)
            let job = DownloadJob(
                url: server.url("/a"), to: directory.appendingPathComponent("a"), options: fastOptions(), engine: engine)
            _ = try await run(job).get()
            XCTAssertEqual(engine.runningLaneThreads, 1)
        }
        // The job (and with it the engine) may be released a little after `run` returned.
        if ProcessThreads.isAvailable {
            try await waitUntil("the released engine's lane thread to end") { ProcessThreads.lanes <= lanesBefore }
        }
    }
}
