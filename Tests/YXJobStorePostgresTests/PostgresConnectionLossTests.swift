import Foundation
import Logging
import XCTest
import YXJobStore
import YXJobStoreConformance
import YXJobStorePostgres

/// The server drops every connection of the store while a worker runs: the worker reconnects, and every
/// job still ends succeeded.
final class PostgresConnectionLossTests: XCTestCase {
    func testAWorkerSurvivesDroppedConnections() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("yxjobstore-pgloss-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let harness = try PostgresTestDatabase.harness(logFolder: folder)
        let url = try PostgresTestDatabase.url()
        var storeLogger = Logger(label: "loss.store")
        storeLogger.logLevel = .critical
        var storeConfiguration = PostgresJobStore.Configuration()
        storeConfiguration.schema = harness.workerArguments.last ?? "yxqueue"
        let store = try await PostgresJobStore.open(url: url, configuration: storeConfiguration, logger: storeLogger)
        do {
            let ids = try await store.enqueue((0..<400).map { _ in JobRequest(name: "loss.step") }).map(\.id)
            var registry = JobRegistry()
            registry.register("loss.step") { _, _ in try await Task.sleep(for: .milliseconds(20)) }
            var configuration = JobStoreConformance.testConfiguration()
            configuration.maximumConcurrentJobs = 4
            configuration.claimBatchSize = 2
            var logger = Logger(label: "loss")
            logger.logLevel = .critical
            let worker = JobWorker(store: store, runner: registry, configuration: configuration, logger: logger)
            let run = Task { try await worker.run() }
            // Ten drops, a few hundred milliseconds apart, while the jobs run; then they must all end.
            var drops = 0
            while drops < 10 {
                try await Task.sleep(for: .milliseconds(Int.random(in: 200...500)))
                try await PostgresTestDatabase.dropOtherConnections(url: url)
                drops += 1
            }
            var succeeded = 0
            let deadline = ContinuousClock.now + .seconds(120)
            while succeeded < ids.count, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
                // The store's own connections were dropped too: a read may fail once.
                succeeded = (try? await store.status().count(.succeeded)) ?? succeeded
            }
            worker.shutdown()
            try await run.value
            let status = try await store.status()
            XCTAssertEqual(status.count(.succeeded), ids.count, "\(status.formattedTable())")
            print("connections dropped \(drops) times while \(ids.count) jobs ran")
        } catch {
            try? await store.close()
            try? await harness.cleanup()
            throw error
        }
        try await store.close()
        try await harness.cleanup()
    }
}
