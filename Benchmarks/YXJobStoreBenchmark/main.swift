// Figures of the job stores on this machine: no-op jobs per second (unbatched and batched), the time
// from enqueue to start (p50, p99), and how long a dead worker's jobs take to come back.
//
//   swift run -c release YXJobStoreBenchmark [--postgres URL] [--jobs N] [--samples N] [--skip-recovery]
//       [--stores SQLite,PostgreSQL] [--modes unbatched,batched,latency] [--recovery-bounds 5,30] [--raw]
//       [--ceiling]
//
// Throughput: no-op jobs through workers (SQLite: one worker; PostgreSQL: four, each with its own
// connections, as four processes would have), unbatched (claims and outcomes of one job each) and batched
// (claims of up to 100, outcomes of up to 200). --raw adds the mean time of one store call without a worker;
// --ceiling, what SQLite alone does on one thread with the store's statements (the most an unbatched
// SQLite worker could reach on this machine at this moment).
//
// SQLite runs in a temporary folder. PostgreSQL runs when a URL is given (or YXQUEUE_TEST_POSTGRES_URL
// is set), in a schema of its own that is dropped at the end. Start a durable server for honest figures:
//   bash -c 'source scripts/lib/postgres.sh; start_test_postgres --durable; swift run -c release YXJobStoreBenchmark'

import Foundation
import Logging
import YXJobStore
import YXJobStorePostgres
import YXJobStoreSQLite
@_spi(YXQueueInternals) import YXQueue

struct Options {
    var postgres: String? = ProcessInfo.processInfo.environment["YXQUEUE_TEST_POSTGRES_URL"]
    var jobs = 20_000
    var samples = 300
    var recovery = true
    var stores: Set<String> = ["SQLite", "PostgreSQL"]
    var modes: Set<String> = ["unbatched", "batched", "latency"]
    var postgresWorkers = 4
    var recoveryBounds: [Int] = [5, 30]

    init(_ arguments: [String]) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let value = index + 1 < arguments.count ? arguments[index + 1] : ""
            switch argument {
            case "--postgres": postgres = value; index += 1
            case "--jobs": jobs = Int(value) ?? jobs; index += 1
            case "--samples": samples = Int(value) ?? samples; index += 1
            case "--recovery-bounds": recoveryBounds = value.split(separator: ",").compactMap { Int($0) }; index += 1
            case "--skip-recovery": recovery = false
            case "--postgres-workers": postgresWorkers = Int(value) ?? postgresWorkers; index += 1
            case "--stores": stores = Set(value.split(separator: ",").map(String.init)); index += 1
            case "--modes": modes = Set(value.split(separator: ",").map(String.init)); index += 1
            default: break
            }
            index += 1
        }
    }
}

/// A store to measure: how to open instances of it, and how to throw it away.
struct Subject {
    var name: String
    var open: @Sendable () async throws -> any JobStore
    var cleanup: @Sendable () async throws -> Void
    /// Workers (each with its own store instance) for the throughput runs.
    var workers: Int
}

/// A logger for errors only.
func quietLogger() -> Logger {
    var logger = Logger(label: "benchmark")
    logger.logLevel = .error
    return logger
}

// MARK: - Throughput

/// Runs `jobs` no-op jobs through `workers` workers, each on its own store instance; returns jobs/s.
func throughput(_ subject: Subject, jobs: Int, batched: Bool) async throws -> Double {
    let name = "bench.noop.\(batched ? "batched" : "single").\(UUID().uuidString.prefix(6))"
    let store = try await subject.open()
    for start in stride(from: 0, to: jobs, by: 5000) {
        _ = try await store.enqueue((0..<min(5000, jobs - start)).map { _ in JobRequest(name: name) })
    }
    let done = Counter()
    var registry = JobRegistry()
    registry.register(name) { _, _ in done.increment() }
    var configuration = JobWorker.Configuration()
    configuration.maximumConcurrentJobs = batched ? 200 : 16
    configuration.claimBatchSize = batched ? 100 : 1
    configuration.completionBatchSize = batched ? 200 : 1
    configuration.pollInterval = .milliseconds(100)
    var instances: [any JobStore] = []
    for _ in 0..<subject.workers { instances.append(try await subject.open()) }
    let clock = ContinuousClock()
    let began = clock.now
    let workers = instances.map { JobWorker(store: $0, runner: registry, configuration: configuration, logger: quietLogger()) }
    let tasks = workers.map { worker in Task { try await worker.run() } }
    while done.value < jobs { try await Task.sleep(for: .milliseconds(5)) }
    // The outcomes of the last jobs are written by now or very soon.
    while try await store.jobs(JobQuery(states: [.running, .available], names: [name], limit: 1)).count > 0 {
        try await Task.sleep(for: .milliseconds(5))
    }
    let elapsed = (clock.now - began).seconds
    for worker in workers { worker.shutdown() }
    for task in tasks { try await task.value }
    for instance in instances { try await instance.close() }
    try await store.close()
    return Double(jobs) / elapsed
}

// MARK: - Enqueue to start

/// Enqueues jobs one at a time from one store instance while an idle worker waits on another (as two
/// processes would); returns the times from the enqueue call to the handler's start, sorted.
func enqueueToStart(_ subject: Subject, samples: Int) async throws -> [Double] {
    let name = "bench.latency.\(UUID().uuidString.prefix(6))"
    let producer = try await subject.open()
    let consumer = try await subject.open()
    let starts = Starts()
    var registry = JobRegistry()
    registry.register(name) { payload, _ in
        starts.record(String(decoding: payload, as: UTF8.self))
    }
    var configuration = JobWorker.Configuration()
    configuration.pollInterval = .seconds(1)
    let worker = JobWorker(store: consumer, runner: registry, configuration: configuration, logger: quietLogger())
    let task = Task { try await worker.run() }
    try await Task.sleep(for: .milliseconds(300))
    var latencies: [Double] = []
    for index in 0..<samples {
        let key = String(index)
        let sent = ContinuousClock.now
        starts.expect(key, sent: sent)
        _ = try await producer.enqueue(JobRequest(name: name, payload: Data(key.utf8)))
        while starts.latency(key) == nil { try await Task.sleep(for: .microseconds(200)) }
        latencies.append(starts.latency(key) ?? 0)
        // Let the worker go back to waiting.
        try await Task.sleep(for: .milliseconds(Int.random(in: 5...20)))
    }
    worker.shutdown()
    try await task.value
    try await consumer.close()
    try await producer.close()
    return latencies.sorted()
}

// MARK: - Recovery

/// A worker claims jobs and dies without a word right after (the worst case: right after its last
/// heartbeat); a live worker with the same bound waits. Returns the seconds until the dead worker's
/// jobs were claimed again and until they succeeded.
func recovery(_ subject: Subject, bound: Duration) async throws -> (claimed: Double, succeeded: Double) {
    let name = "bench.recovery.\(UUID().uuidString.prefix(6))"
    let store = try await subject.open()
    let ids = try await store.enqueue((0..<10).map { _ in JobRequest(name: name) }).map(\.id)
    var configuration = JobWorker.Configuration()
    configuration.recoveryBound = bound
    let dead = try await store.claim(
        ClaimRequest(owner: "dead-worker", names: .only([name]), limit: 10, leaseDuration: configuration.leaseDuration)
    )
    let clock = ContinuousClock()
    let died = clock.now
    guard dead.count == 10 else { throw BenchmarkError("the dead worker claimed \(dead.count) jobs") }
    let live = try await subject.open()
    let reclaimed = Locked<ContinuousClock.Instant?>(nil)
    var registry = JobRegistry()
    registry.register(name) { _, _ in
        reclaimed.withLock { $0 = $0 ?? .now }
    }
    let worker = JobWorker(store: live, runner: registry, configuration: configuration, logger: quietLogger())
    let task = Task { try await worker.run() }
    while true {
        let states = try await ids.asyncMap { try await store.job($0)?.state }
        if states.allSatisfy({ $0 == .succeeded }) { break }
        try await Task.sleep(for: .milliseconds(20))
    }
    let succeeded = (clock.now - died).seconds
    worker.shutdown()
    try await task.value
    try await live.close()
    try await store.close()
    let claimed = reclaimed.withLock { $0 }.map { ($0 - died).seconds } ?? succeeded
    return (claimed, succeeded)
}

// MARK: - Support

struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

final class Counter: Sendable {
    private let count = Locked(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

final class Starts: Sendable {
    private let state = Locked<(sent: [String: ContinuousClock.Instant], latency: [String: Double])>(([:], [:]))

    func expect(_ key: String, sent: ContinuousClock.Instant) {
        state.withLock { $0.sent[key] = sent }
    }

    func record(_ key: String) {
        let now = ContinuousClock.now
        state.withLock { state in
            if let sent = state.sent[key] { state.latency[key] = (now - sent).seconds }
        }
    }

    func latency(_ key: String) -> Double? {
        state.withLock { $0.latency[key] }
    }
}

extension Duration {
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    let index = min(sorted.count - 1, max(0, Int((p * Double(sorted.count)).rounded(.up)) - 1))
    return sorted[index]
}

func format(_ value: Double, _ digits: Int = 0) -> String {
    String(format: "%.\(digits)f", value)
}

// MARK: - Main

let options = Options(Array(CommandLine.arguments.dropFirst()))
let folder = FileManager.default.temporaryDirectory.appendingPathComponent("yxjobstore-bench-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
let sqlitePath = folder.appendingPathComponent("jobs.sqlite").path
var subjects = [
    Subject(
        name: "SQLite",
        open: { try await SQLiteJobStore.open(path: sqlitePath, logger: quietLogger()) },
        cleanup: { try? FileManager.default.removeItem(at: folder) },
        workers: 1
    )
]
if let url = options.postgres {
    let schema = "bench_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(10).lowercased()
    var configuration = PostgresJobStore.Configuration()
    configuration.schema = schema
    let opening = configuration
    subjects.append(
        Subject(
            name: "PostgreSQL",
            open: { try await PostgresJobStore.open(url: url, configuration: opening, logger: quietLogger()) },
            cleanup: {
                let store = try await PostgresJobStore.open(url: url, configuration: opening, logger: quietLogger())
                try await store.dropSchema()
            },
            workers: options.postgresWorkers
        )
    )
} else {
    print("(no PostgreSQL: pass --postgres URL or set YXQUEUE_TEST_POSTGRES_URL)")
}

print("YXJobStoreBenchmark: \(options.jobs) no-op jobs per throughput run, \(options.samples) enqueue-to-start samples")
print("")
print("| store | unbatched jobs/s | batched jobs/s | enqueue→start p50 | p99 |")
print("|---|---:|---:|---:|---:|")
subjects = subjects.filter { options.stores.contains($0.name) }
for subject in subjects {
    let single = options.modes.contains("unbatched") ? try await throughput(subject, jobs: options.jobs, batched: false) : .nan
    let batched = options.modes.contains("batched") ? try await throughput(subject, jobs: options.jobs, batched: true) : .nan
    let latencies = options.modes.contains("latency") ? try await enqueueToStart(subject, samples: options.samples) : []
    print(
        "| \(subject.name) | \(format(single)) | \(format(batched)) | \(format(percentile(latencies, 0.5) * 1000, 1)) ms "
            + "| \(format(percentile(latencies, 0.99) * 1000, 1)) ms |"
    )
}
if options.recovery {
    print("")
    print("| store | recovery bound | dead worker's jobs claimed again after | succeeded after |")
    print("|---|---:|---:|---:|")
    for subject in subjects {
        for bound in options.recoveryBounds {
            let result = try await recovery(subject, bound: .seconds(bound))
            print("| \(subject.name) | \(bound) s | \(format(result.claimed, 2)) s | \(format(result.succeeded, 2)) s |")
        }
    }
}
for subject in subjects { try await subject.cleanup() }

// MARK: - Store calls without a worker (--raw)

/// The mean time of one claim of one job and of one outcome, called one after the other.
func rawTiming(_ store: any JobStore, _ label: String) async throws {
    let name = "bench.raw.\(UUID().uuidString.prefix(6))"
    _ = try await store.enqueue((0..<3000).map { _ in JobRequest(name: name) })
    let request = ClaimRequest(owner: "raw", names: .only([name]), limit: 1, leaseDuration: .seconds(30))
    let clock = ContinuousClock()
    var claimTime = Duration.zero
    var completeTime = Duration.zero
    for _ in 0..<1000 {
        let t0 = clock.now
        let jobs = try await store.claim(request)
        let t1 = clock.now
        _ = try await store.complete(jobs.map { JobCompletion(lease: $0.lease, outcome: .succeeded) })
        let t2 = clock.now
        claimTime += t1 - t0
        completeTime += t2 - t1
    }
    // An outcome with the claim of the next job, as a worker makes them while jobs wait.
    var held = try await store.claim(request)
    let t3 = clock.now
    for _ in 0..<1000 {
        held = try await store.complete(held.map { JobCompletion(lease: $0.lease, outcome: .succeeded) }, thenClaim: request).claimed
    }
    let bothTime = (clock.now - t3) / 1000
    let t4 = clock.now
    for _ in 0..<1000 { _ = try await store.concurrencyLimits() }
    let readTime = (clock.now - t4) / 1000
    print(
        "| \(label) | \(format((claimTime / 1000).seconds * 1e6)) µs | \(format((completeTime / 1000).seconds * 1e6)) µs "
            + "| \(format(bothTime.seconds * 1e6)) µs | \(format(readTime.seconds * 1e6)) µs |"
    )
}

// MARK: - The SQLite ceiling (--ceiling)

/// SQLite alone: one thread on the writer connection making the transactions an unbatched worker's
/// trips make (the outcome of one job and the claim of the next), with the store's own statements and
/// binding code, and no worker, task or thread hand-off. Returns jobs/s.
func sqliteCeiling(jobs: Int) async throws -> Double {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("yxjobstore-ceiling-\(UUID().uuidString).sqlite").path
    defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
    let store = try await SQLiteJobStore.open(path: path, logger: quietLogger())
    let name = "bench.ceiling"
    for start in stride(from: 0, to: jobs + 1, by: 5000) {
        _ = try await store.enqueue((0..<min(5000, jobs + 1 - start)).map { _ in JobRequest(name: name) })
    }
    let request = ClaimRequest(owner: "ceiling", names: .only([name]), limit: 1, leaseDuration: .seconds(30))
    let seconds = try await store.withWriter { db -> Double in
        var held = try SQLiteJobStore.claimJobs(request, limited: false, db)
        let clock = ContinuousClock()
        let began = clock.now
        for _ in 0..<jobs {
            _ = try db.rows("BEGIN IMMEDIATE", prepared: true)
            _ = try SQLiteJobStore.recordOutcomes(held.map { JobCompletion(lease: $0.lease, outcome: .succeeded) }[...], db)
            held = try SQLiteJobStore.claimJobs(request, limited: false, db)
            _ = try db.rows("COMMIT", prepared: true)
        }
        return (clock.now - began).seconds
    }
    try await store.close()
    return Double(jobs) / seconds
}

if CommandLine.arguments.contains("--ceiling") {
    print("")
    print("| SQLite alone, one thread, outcome + next claim per transaction | jobs/s |")
    print("|---|---:|")
    print("| the store's statements, no worker | \(format(try await sqliteCeiling(jobs: options.jobs))) |")
}

if CommandLine.arguments.contains("--raw") {
    print("")
    print("| store | one claim of one job | one outcome | an outcome with the next claim | a trivial read (the driver's floor) |")
    print("|---|---:|---:|---:|---:|")
    let rawPath = FileManager.default.temporaryDirectory.appendingPathComponent("yxjobstore-raw-\(UUID().uuidString).sqlite").path
    let sqlite = try await SQLiteJobStore.open(path: rawPath, logger: quietLogger())
    try await rawTiming(sqlite, "SQLite")
    try await sqlite.close()
    for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: rawPath + suffix) }
    if let url = options.postgres {
        var configuration = PostgresJobStore.Configuration()
        configuration.schema = "bench_raw_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").prefix(8).lowercased()
        let store = try await PostgresJobStore.open(url: url, configuration: configuration, logger: quietLogger())
        try await rawTiming(store, "PostgreSQL")
        try await store.dropSchema()
    }
}
