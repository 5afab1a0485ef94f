import Foundation
import XCTest
import YXJobStoreConformance

/// Worker processes on one PostgreSQL database, killed with SIGKILL and restarted while they run jobs.
final class PostgresChaosTests: XCTestCase {
    func testChaosWithKilledWorkers() async throws {
        let long = ProcessInfo.processInfo.environment["YXQUEUE_LONG_TESTS"] == "1"
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("yxjobstore-pgchaos-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let harness = try PostgresTestDatabase.harness(logFolder: folder)
        do {
            let report = try await JobStoreConformance(harness: harness, logFolder: folder)
                .chaos(workers: 4, jobs: long ? 10_000 : 2_000)
            print("PostgreSQL chaos: \(report)")
            XCTAssertEqual(report.jobs, long ? 10_000 : 2_000)
            XCTAssertGreaterThan(report.kills, 0)
        } catch {
            try? await harness.cleanup()
            throw error
        }
        try await harness.cleanup()
    }
}
