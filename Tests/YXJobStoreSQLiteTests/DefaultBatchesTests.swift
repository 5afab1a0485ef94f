import Foundation
import XCTest
import YXJobStore
import YXJobStoreSQLite

/// `JobStore.enqueue(batches:)`'s default, for stores that do not implement it (both shipped stores
/// do): every batch is stored with one `enqueue(_:)`, and the joins are checked after that, as the
/// documentation says (found by a review: the default had no test).
final class DefaultBatchesTests: XCTestCase {
    private var folder: URL!

    override func setUp() async throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("yxjobstore-default-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    override func tearDown() async throws {
        try? FileManager.default.removeItem(at: folder)
    }

    private func keyed(_ key: String, _ payload: String) -> JobRequest {
        JobRequest(name: "default.batches", payload: Data(payload.utf8), options: JobOptions(uniqueKey: key, onDuplicate: .join))
    }

    func testTheDefaultStoresEveryBatchThenChecksTheJoins() async throws {
        let sqlite = try await SQLiteJobStore.open(path: folder.appendingPathComponent("jobs.sqlite").path)
        let store = ForwardingStore(base: sqlite)
        let held = try await store.enqueue(keyed("k1", "held"))
        var steps: [String] = []
        var given: [[JobRequest]] = [[keyed("k2", "new"), keyed("k1", "again")], [keyed("k3", "later")]]
        let batches = JobRequestBatches(concurrencyLimits: ["default.key": 2], checkingJoins: { joined in
            steps.append("\(String(decoding: joined.request.payload, as: UTF8.self)) joined \(joined.existing == held.id ? "held" : "?")")
        }) {
            steps.append("next")
            return given.isEmpty ? nil : given.removeFirst()
        }
        let counts = try await store.enqueue(batches: batches)
        XCTAssertEqual(counts, EnqueueCounts(enqueued: 2, joined: 1))
        XCTAssertEqual(steps, ["next", "next", "next", "again joined held"], "every batch first, then the joins")
        let limits = try await store.concurrencyLimits()
        XCTAssertEqual(limits["default.key"], 2)

        // A check that throws: the error reaches the caller, and the jobs stay stored (documented).
        struct Conflict: Error {}
        var more: [[JobRequest]] = [[keyed("k4", "new"), keyed("k1", "other")]]
        let refusing = JobRequestBatches(checkingJoins: { _ in throw Conflict() }) { more.isEmpty ? nil : more.removeFirst() }
        do {
            _ = try await store.enqueue(batches: refusing)
            XCTFail("the check's error was not thrown")
        } catch is Conflict {
        }
        let stored = try await store.jobs(JobQuery(names: ["default.batches"]))
        XCTAssertEqual(stored.map { String(decoding: $0.payload, as: UTF8.self) }, ["held", "new", "later", "new"])
        try await store.close()
    }
}

/// A store of someone else's: every requirement but `enqueue(batches:)`, forwarded to a real store.
private struct ForwardingStore: JobStore {
    let base: SQLiteJobStore

    func enqueue(_ requests: [JobRequest]) async throws -> [EnqueueResult] { try await base.enqueue(requests) }
    func claim(_ request: ClaimRequest) async throws -> [ClaimedJob] { try await base.claim(request) }
    func heartbeat(_ heartbeats: [JobHeartbeat], leaseDuration: Duration) async throws -> LeaseCheck {
        try await base.heartbeat(heartbeats, leaseDuration: leaseDuration)
    }
    func checkLeases(_ leases: [JobLease]) async throws -> LeaseCheck { try await base.checkLeases(leases) }
    func complete(_ completions: [JobCompletion]) async throws -> [JobLease] { try await base.complete(completions) }
    func recoverExpiredLeases() async throws -> Int { try await base.recoverExpiredLeases() }
    func resolveDependencies() async throws -> Int { try await base.resolveDependencies() }
    func delayUntilNextJob(names: JobNameFilter) async throws -> Duration? { try await base.delayUntilNextJob(names: names) }
    var changeGeneration: UInt64 { base.changeGeneration }
    func waitForChange(after generation: UInt64, timeout: Duration) async { await base.waitForChange(after: generation, timeout: timeout) }
    func cancel(_ id: JobID, reason: String) async throws -> CancelResult { try await base.cancel(id, reason: reason) }
    func job(_ id: JobID) async throws -> JobRecord? { try await base.job(id) }
    func jobs(_ query: JobQuery) async throws -> [JobRecord] { try await base.jobs(query) }
    func status() async throws -> JobStoreStatus { try await base.status() }
    func setConcurrencyLimit(_ limit: Int?, forKey key: String) async throws { try await base.setConcurrencyLimit(limit, forKey: key) }
    func concurrencyLimits() async throws -> [String: Int] { try await base.concurrencyLimits() }
    func pruneFinishedJobs(before date: Date) async throws -> Int { try await base.pruneFinishedJobs(before: date) }
    func close() async throws { try await base.close() }
}
