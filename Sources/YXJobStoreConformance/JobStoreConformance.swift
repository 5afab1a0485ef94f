import Foundation
import Logging
import YXJobStore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The promises of a job store (SPEC §6), written once as scenarios over a ``JobStoreHarness`` and run
/// against every store. Each scenario throws ``ConformanceError`` when a promise does not hold.
///
/// Scenarios that need "another process" start real `YXJobStoreTestWorker` processes and kill them with
/// SIGKILL; the others open several instances of the store (each with its own connections, as
/// processes would have).
///
/// ```swift
/// func testClaimThenWorkerKilled() async throws {
///     try await JobStoreConformance(harness: makeHarness(), logFolder: folder).claimThenWorkerKilled()
/// }
/// ```
public struct JobStoreConformance: Sendable {
    public let harness: JobStoreHarness
    /// Where worker processes write their output.
    public let logFolder: URL
    let logger: Logger

    public init(harness: JobStoreHarness, logFolder: URL, logger: Logger = JobStoreConformance.quietLogger) {
        self.harness = harness
        self.logFolder = logFolder
        self.logger = logger
    }

    /// A logger that only reports errors (failed jobs are expected here).
    public static var quietLogger: Logger {
        var logger = Logger(label: "conformance")
        logger.logLevel = .error
        return logger
    }

    /// Worker settings for tests: a dead worker's jobs come back within `recoveryBound`, cancels are
    /// noticed within 100 ms, progress is written every 50 ms.
    ///
    /// The bound is long by default (10 s): on a loaded machine a short lease may expire under a live
    /// worker and run a job twice, which the scenarios that count attempts must not see. Every worker
    /// still looks for other workers' expired leases every second.
    public static func testConfiguration(recoveryBound: Duration = .seconds(10)) -> JobWorker.Configuration {
        var configuration = JobWorker.Configuration()
        configuration.recoveryBound = recoveryBound
        configuration.cancelCheckInterval = .milliseconds(100)
        configuration.progressInterval = .milliseconds(50)
        configuration.pollInterval = .milliseconds(250)
        configuration.shutdownGracePeriod = .seconds(5)
        return configuration
    }

    /// Opens a store instance, runs `body`, closes the instance.
    func withStore<T: Sendable>(_ body: (any JobStore) async throws -> T) async throws -> T {
        let store = try await harness.open()
        do {
            let result = try await body(store)
            try await store.close()
            return result
        } catch {
            try? await store.close()
            throw error
        }
    }

    /// Starts a worker in this process.
    func startWorker(
        _ store: any JobStore,
        _ registry: JobRegistry,
        _ configuration: JobWorker.Configuration = testConfiguration()
    ) -> RunningWorker {
        RunningWorker(worker: JobWorker(store: store, runner: registry, configuration: configuration, logger: logger))
    }

    /// Starts a `YXJobStoreTestWorker worker` process on the store for these job names.
    func startWorkerProcess(names: [String], extra: [String] = []) throws -> TestWorkerProcess {
        try TestWorkerProcess(
            ["worker"] + harness.workerArguments + ["--names", names.joined(separator: ",")] + extra,
            logFolder: logFolder
        )
    }

    /// The state of each job.
    func states(_ store: any JobStore, _ ids: [JobID]) async throws -> [StoredJobState?] {
        var states: [StoredJobState?] = []
        for id in ids {
            states.append(try await store.job(id)?.state)
        }
        return states
    }

    func record(_ store: any JobStore, _ id: JobID) async throws -> JobRecord {
        try unwrap(try await store.job(id), "the record of job \(id)")
    }

    func claimOne(_ store: any JobStore, _ name: String, owner: String, lease: Duration = .seconds(30)) async throws
        -> ClaimedJob?
    {
        try await store.claim(ClaimRequest(owner: owner, names: .only([name]), limit: 1, leaseDuration: lease)).first
    }
}

/// A ``JobWorker`` running in this process for a scenario.
final class RunningWorker: Sendable {
    let worker: JobWorker
    let task: Task<Void, any Error>

    init(worker: JobWorker) {
        self.worker = worker
        task = Task { try await worker.run() }
    }

    /// Shuts the worker down gracefully and waits for `run()` to return.
    func stop() async throws {
        worker.shutdown()
        try await task.value
    }
}
