import Foundation
import XCTest
import YXQueue
import YXTestServer

@testable import YXDownload

/// The engine's lanes: transfers dealt to several threads keep every promise of one thread. (The speed
/// limit over two lanes is in `DownloadLimitsTests`.)
final class TransferLaneTests: DownloadTestCase {
    func testLaneCountIsAtLeastOne() {
        let three = TransferEngine(lanes: 3)
        let none = TransferEngine(lanes: 0)
        defer {
            three.shutdown()
            none.shutdown()
        }
        XCTAssertEqual(three.laneCount, 3)
        XCTAssertEqual(none.laneCount, 1)
        XCTAssertGreaterThanOrEqual(TransferEngine.defaultLaneCount, 1)
        XCTAssertLessThanOrEqual(TransferEngine.defaultLaneCount, 2)
    }

    /// Small files over one, two and three lanes: all whole, and each lane reuses its connections.
    func testSmallFilesOverOneToThreeLanes() async throws {
        for index in 0..<300 {
            server.serve("/lane/\(index)", Resource(.generated(size: 3_000, seed: UInt64(index))))
        }
        for lanes in 1...3 {
            let engine = TransferEngine(lanes: lanes)
            defer { engine.shutdown() }
            server.resetCounters()
            var options = fastOptions()
            options.computeSHA256 = false
            limitTransfers(8)
            let jobs = (0..<300).map { index in
                DownloadJob(
                    url: server.url("/lane/\(index)"),
                    to: directory.appendingPathComponent("l\(lanes)-\(index)"), options: options, engine: engine)
            }
            for job in jobs { dispatcher.add(job) }
            await dispatcher.waitForAllJobs()
            XCTAssertTrue(jobs.allSatisfy { $0.state == .finished }, "\(lanes) lanes")
            XCTAssertEqual(server.requestCount, 300)
            // Each lane keeps its own connections: at most the transfers in flight, per lane.
            XCTAssertLessThanOrEqual(server.connectionCount, 8 * lanes, "\(lanes) lanes")
            XCTAssertEqual(engine.connectionsOpened, server.connectionCount)
            for index in [0, 151, 299] {
                XCTAssertEqual(
                    try sha256(of: directory.appendingPathComponent("l\(lanes)-\(index)")),
                    GeneratedContent.sha256(size: 3_000, seed: UInt64(index)))
            }
        }
    }

    /// The parts of one file on several lanes write into the same `.part` at once.
    func testSegmentsOnSeveralLanesMakeAWholeFile() async throws {
        let size: Int64 = 6 << 20
        server.serve("/big.bin", Resource(.generated(size: size, seed: 41), etag: "v1"))
        let engine = TransferEngine(lanes: 3)
        defer { engine.shutdown() }
        var options = fastOptions(connections: 6)
        options.minimumSegmentSize = 256 * 1024
        let job = DownloadJob(
            url: server.url("/big.bin"), to: directory.appendingPathComponent("big.bin"), options: options,
            engine: engine)
        let result = try await run(job).get()
        XCTAssertEqual(result.sha256, GeneratedContent.sha256(size: size, seed: 41))
        XCTAssertEqual(server.requests(to: "/big.bin").count, 7, "a probe and six parts")
    }
}
