import Foundation
import XCTest
import YXJobStoreConformance
import YXJobStoreSQLite

/// Worker processes on one SQLite file, killed with SIGKILL and restarted while they run jobs.
final class SQLiteChaosTests: XCTestCase {
    func testChaosWithKilledWorkers() async throws {
        let long = ProcessInfo.processInfo.environment["YXQUEUE_LONG_TESTS"] == "1"
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("yxjobstore-chaos-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("jobs.sqlite").path
        let harness = JobStoreHarness(
            storeName: "SQLite",
            workerArguments: ["--store", path],
            open: { try await SQLiteJobStore.open(path: path) },
            cleanup: {}
        )
        let report = try await JobStoreConformance(harness: harness, logFolder: folder)
            .chaos(workers: 3, jobs: long ? 10_000 : 1_500)
        print("SQLite chaos: \(report)")
        XCTAssertEqual(report.jobs, long ? 10_000 : 1_500)
        XCTAssertGreaterThan(report.kills, 0)
    }
}
