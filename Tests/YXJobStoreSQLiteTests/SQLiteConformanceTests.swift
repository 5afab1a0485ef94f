import Foundation
import XCTest
import YXJobStore
import YXJobStoreConformance
import YXJobStoreSQLite

/// The conformance suite on the SQLite store: a new database file in a temporary folder per test.
final class SQLiteConformanceTests: XCTestCase {
    private var folder: URL!

    override func setUp() async throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("yxjobstore-sqlite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDown() async throws {
        await TestWorkerProcess.killSurvivors()
        try? FileManager.default.removeItem(at: folder)
    }

    private func conformance() -> JobStoreConformance {
        let path = folder.appendingPathComponent("jobs.sqlite").path
        let harness = JobStoreHarness(
            storeName: "SQLite",
            workerArguments: ["--store", path],
            open: { try await SQLiteJobStore.open(path: path) },
            cleanup: {}
        )
        return JobStoreConformance(harness: harness, logFolder: folder)
    }

    func testEnqueueThenCrashBeforeClaim() async throws { try await conformance().enqueueThenCrashBeforeClaim() }
    func testClaimThenWorkerKilled() async throws { try await conformance().claimThenWorkerKilled() }
    func testCleanupKillsSurvivingWorkers() async throws { try await conformance().cleanupKillsSurvivingWorkers() }
    func testLeaseExpiryRefusesStaleOutcome() async throws { try await conformance().leaseExpiryRefusesStaleOutcome() }
    func testGracefulShutdownReleases() async throws { try await conformance().gracefulShutdownReleases() }
    func testRetriesWithBackoff() async throws { try await conformance().retriesWithBackoff() }
    func testReleaseForLater() async throws { try await conformance().releaseForLater() }
    func testNotBefore() async throws { try await conformance().notBefore() }
    func testPriorities() async throws { try await conformance().priorities() }
    func testJobTimeout() async throws { try await conformance().jobTimeout() }
    func testUniqueKeys() async throws { try await conformance().uniqueKeys() }
    func testEnqueueInBatches() async throws { try await conformance().enqueueInBatches() }
    func testDependencies() async throws { try await conformance().dependencies() }
    func testDependencyFailureCancelsDependents() async throws {
        try await conformance().dependencyFailureCancelsDependents()
    }
    func testCancelAndProgressAcrossProcesses() async throws {
        try await conformance().cancelAndProgressAcrossProcesses()
    }
    func testGlobalLimitUnderContention() async throws { try await conformance().globalLimitUnderContention() }
    func testOutcomesThenClaim() async throws { try await conformance().outcomesThenClaim() }
    func testUndecodableJobDiscarded() async throws { try await conformance().undecodableJobDiscarded() }

    // Stored JobDefinitions run through a YXQueue Dispatcher.
    func testDispatcherRunsStoredGraphsUnderQueueLimits() async throws {
        try await conformance().dispatcherRunsStoredGraphsUnderQueueLimits()
    }
    func testDispatcherProgressReadFromAnotherConnection() async throws {
        try await conformance().dispatcherProgressReadFromAnotherConnection()
    }
    func testDispatcherCancelFromAnotherConnection() async throws {
        try await conformance().dispatcherCancelFromAnotherConnection()
    }
    func testDispatcherRetriesWithinAndAcrossAttempts() async throws {
        try await conformance().dispatcherRetriesWithinAndAcrossAttempts()
    }
    func testDispatcherDiscardsUndecodableDefinitions() async throws {
        try await conformance().dispatcherDiscardsUndecodableDefinitions()
    }
}
