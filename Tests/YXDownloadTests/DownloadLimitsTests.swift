import Foundation
import XCTest
import YXQueue
import YXTestServer

@testable import YXDownload

final class DownloadLimitsTests: DownloadTestCase {
    /// Two transfers, dealt to two lanes of the engine: one limit for both, not one per lane.
    func testOverallSpeedLimitIsSharedByAllTransfers() async throws {
        let size: Int64 = 1 << 20
        for index in 0..<2 {
            server.serve("/limited/\(index)", Resource(.generated(size: size, seed: UInt64(index))))
        }
        engine.shutdown()
        engine = TransferEngine(lanes: 2)
        engine.setMaxSpeed(bytesPerSecond: 1 << 20)
        let started = Date()
        let jobs = (0..<2).map { makeJob("/limited/\($0)", file: "limited-\($0)") }
        for job in jobs { dispatcher.add(job) }
        await dispatcher.waitForAllJobs()
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertTrue(jobs.allSatisfy { $0.state == .finished })
        // 2 MiB at 1 MiB/s: about 2 s (less a tenth of a second of burst); generous bounds. With the
        // whole limit on each lane it would take about 1 s.
        XCTAssertGreaterThan(elapsed, 1.5, "the limit was not applied, or applied per lane")
        XCTAssertLessThan(elapsed, 30, "generous: a loaded machine is slower, never faster")
        for index in 0..<2 {
            XCTAssertEqual(
                try sha256(of: directory.appendingPathComponent("limited-\(index)")),
                GeneratedContent.sha256(size: size, seed: UInt64(index)))
        }
    }

    func testTLSIsVerifiedByDefaultAndCanBeTurnedOff() async throws {
        let tls = try HTTPSFixture(directory: directory)
        defer { tls.stop() }
        let body = Data((0..<100_000).map { UInt8($0 % 251) })
        try body.write(to: tls.root.appendingPathComponent("secure.bin"))
        let url = URL(string: "https://127.0.0.1:\(tls.port)/secure.bin")!

        let strict = DownloadJob(url: url, to: directory.appendingPathComponent("strict.bin"), options: fastOptions(), engine: engine)
        let error = downloadError(await run(strict))
        XCTAssertEqual(error?.kind, .tls, "a self-signed certificate is refused by default")
        XCTAssertEqual(error?.isTransient, false)
        XCTAssertFalse(files().contains("strict.bin"))

        var insecure = fastOptions()
        insecure.verifyTLS = false
        let relaxed = DownloadJob(url: url, to: directory.appendingPathComponent("relaxed.bin"), options: insecure, engine: engine)
        let result = try await run(relaxed).get()
        XCTAssertEqual(try Data(contentsOf: result.file), body)
    }

    func testCredentialsInURLsNeverAppearInErrors() async throws {
        server.serve("/private.bin", .status(404))
        var parts = URLComponents(url: server.url("/private.bin"), resolvingAgainstBaseURL: false)!
        parts.user = "alice"
        parts.password = "s3cret"
        let job = DownloadJob(url: parts.url!, to: directory.appendingPathComponent("p.bin"), options: fastOptions(), engine: engine)
        let outcome = await run(job)
        let error = try XCTUnwrap(downloadError(outcome))
        XCTAssertFalse("\(error)".contains("s3cret"))
        XCTAssertFalse(error.url.contains("alice"))
        XCTAssertEqual(server.requests(to: "/private.bin").first?.header("Authorization")?.hasPrefix("Basic "), true)
    }
}
