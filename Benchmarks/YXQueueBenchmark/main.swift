// YXQueue benchmark: the framework next to a bare OperationQueue, in one run.
//
//   swift run -c release YXQueueBenchmark [--rounds N] [--profile]
//
// Prints, as medians over N rounds (default 5):
//   1. throughput: 100,000 no-op jobs through a Dispatcher vs 100,000 BlockOperations through a bare
//      OperationQueue (both with maxConcurrentOperationCount 5), the same jobs added to a paused
//      dispatcher and then run (each side alone), and the same no-op work as typed definitions
//      (`JobDefinition` with a synchronous body);
//   2. dependencies: 16,000 jobs each A → B, vs the same 32,000 operations with addDependency in a
//      bare OperationQueue, added dependents first (the slow case) and pair by pair;
//   3. memory: resident memory per queued (not yet running) job, and the process's peak RSS;
//   4. the floor of a download: 20,000 jobs shaped like `yxdownload -j 16` on small files (a window of
//      16, one operation each, completed from another thread as the transfer engine does, an observer
//      on a serial callback queue), without curl and without files: CPU time and context switches per
//      job, from getrusage. What a small download costs before it fetches or writes anything. Then the
//      same with an observer of terminal events only (`observe(.terminal)`), which spares each job
//      the delivery of its start. The window is refilled from the main thread (it waits on a
//      semaphore); then both again with the window refilled on the callback queue (the producer runs
//      on the queue that receives the events), first a dispatch queue, then a `DirectQueue`, whose
//      events are delivered on the thread that completed the job, as yxdownload's run does.
import Foundation
import YXQueue

#if canImport(Glibc)
import Glibc
#endif

let arguments = CommandLine.arguments
let rounds = arguments.firstIndex(of: "--rounds").flatMap { Int(arguments[$0 + 1]) } ?? 5
let width = 5
let jobCount = 100_000
let pairCount = 16_000

/// A job whose single operation does nothing (the default `QueueOperation.execute`).
final class NoOpJob: Job, @unchecked Sendable {
    override var queue: String { "noop" }
}

/// A typed job whose synchronous body does nothing.
struct SyncNoOp: JobDefinition {
    var work: JobWork<Int> { .run(on: "noop") { (_: JobContext) throws -> Int in 0 } }
}

/// A typed job whose `async` body does nothing.
struct AsyncNoOp: JobDefinition {
    var work: JobWork<Int> { .run(on: "noop") { (_: JobContext) async throws -> Int in 0 } }
}

/// A job of two operations, B waiting for A.
final class PairJob: Job, @unchecked Sendable {
    override class var managerClass: JobManager.Type { PairManager.self }
}

final class PairManager: JobManager, @unchecked Sendable {
    override func makeOperations() -> [QueueOperation] {
        let a = QueueOperation(queue: "pair")
        let b = QueueOperation(queue: "pair")
        b.addPrerequisite(a)
        return [a, b]
    }
}

/// A job shaped like a small download: one operation that finishes on another thread.
final class HandOffJob: Job, @unchecked Sendable {
    override var queue: String { "handoff" }
    override class var operationClass: QueueOperation.Type { HandOffOperation.self }
}

/// Stands in for the transfer engine: one thread that completes what it is handed.
let engineQueue = DispatchQueue(label: "bench.engine")

final class HandOffOperation: QueueOperation, @unchecked Sendable {
    /// Like a download's transfer step: `execute` only hands the work to the engine.
    override var executesInline: Bool { true }

    override func execute(completion: @escaping @Sendable (Result<(any Sendable)?, any Error>) -> Void) {
        engineQueue.async { completion(.success(nil)) }
    }
}

/// CPU seconds (user + system) and context switches (voluntary + involuntary) of this process so far.
func usage() -> (cpu: Double, switches: Int) {
    var usage = rusage()
    #if canImport(Glibc)
    getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    let cpu = Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    return (cpu, usage.ru_nvcsw + usage.ru_nivcsw)
}

let floorJobCount = 20_000

/// Runs `floorJobCount` hand-off jobs as the command line does, each observed for `kinds` of events;
/// returns CPU µs and context switches per job.
func downloadShapedFloor(
    jobs floorJobCount: Int = floorJobCount, observing kinds: JobEvent.Kinds = .all
) -> (micros: Double, switches: Double) {
    let dispatcher = Dispatcher(name: "bench.floor", queues: ["handoff": 16])
    let callbacks = DispatchQueue(label: "bench.callbacks")
    let window = DispatchSemaphore(value: 16)
    let before = usage()
    var tokens: [JobObservation] = []
    tokens.reserveCapacity(floorJobCount)
    for _ in 0..<floorJobCount {
        window.wait()
        let job = HandOffJob(callbackQueue: callbacks)
        tokens.append(job.observe(kinds) { _, event in
            if event.isTerminal { window.signal() }
        })
        dispatcher.add(job)
    }
    dispatcher.waitUntilAllJobsAreFinished()
    let after = usage()
    return ((after.cpu - before.cpu) * 1e6 / Double(floorJobCount),
            Double(after.switches - before.switches) / Double(floorJobCount))
}

/// What the window of ``downloadShapedRefill(jobs:observing:)`` needs, touched only on its callback
/// queue.
final class RefillState: @unchecked Sendable {
    var left: Int
    var tokens: [JobObservation] = []
    init(left: Int) { self.left = left }
}

/// The same jobs, with the window refilled as `yxdownload` refills it: the next job is added on the
/// serial queue that receives the events (the CLI's producer runs on its run's queue), so a job's end
/// starts the next one without waking another thread. Returns CPU µs and context switches per job.
///
/// - Parameter direct: The callback queue is a ``DirectQueue``'s: a job's end is delivered, and the next
///   job added, on the thread that completed the job (the engine's), as `yxdownload` does.
func downloadShapedRefill(
    jobs count: Int = floorJobCount, observing kinds: JobEvent.Kinds = .all, direct: Bool = false
) -> (micros: Double, switches: Double) {
    let dispatcher = Dispatcher(name: "bench.refill", queues: ["handoff": 16])
    let directQueue = direct ? DirectQueue(label: "bench.callbacks") : nil
    let callbacks = directQueue?.queue ?? DispatchQueue(label: "bench.callbacks")
    let state = RefillState(left: count)
    state.tokens.reserveCapacity(count)
    @Sendable func addOne() {
        guard state.left > 0 else { return }
        state.left -= 1
        let job = HandOffJob(callbackQueue: callbacks)
        state.tokens.append(job.observe(kinds) { _, event in
            if event.isTerminal { addOne() }
        })
        dispatcher.add(job)
    }
    let before = usage()
    if let directQueue {
        let added = DispatchSemaphore(value: 0)
        directQueue.run {
            for _ in 0..<16 { addOne() }
            added.signal()
        }
        added.wait()
    } else {
        callbacks.sync {
            for _ in 0..<16 { addOne() }
        }
    }
    dispatcher.waitUntilAllJobsAreFinished()
    let after = usage()
    precondition(callbacks.sync { state.left == 0 && state.tokens.count == count })
    return ((after.cpu - before.cpu) * 1e6 / Double(count), Double(after.switches - before.switches) / Double(count))
}

func seconds(_ body: () -> Void) -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

/// Resident set size now, in bytes (Linux: /proc/self/statm).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func peakResidentBytes() -> Int {
    var usage = rusage()
    #if canImport(Glibc)
    getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
    getrusage(RUSAGE_SELF, &usage)
    #endif
    #if os(Linux)
    return usage.ru_maxrss * 1024  // kilobytes on Linux
    #else
    return usage.ru_maxrss  // bytes on macOS
    #endif
}

func frameworkThroughput() -> Double {
    let dispatcher = Dispatcher(name: "bench.throughput", queues: ["noop": width])
    return seconds {
        for _ in 0..<jobCount { dispatcher.add(NoOpJob()) }
        dispatcher.waitUntilAllJobsAreFinished()
    }
}

/// The no-op jobs with the adding thread and the executor apart: all added to a paused dispatcher
/// (timed), then run (timed). What each side costs alone, to compare with the time of both at once:
/// the adding thread and the pool threads share the two cores, the allocator, and every job's memory.
func frameworkSplit() -> (add: Double, run: Double) {
    let dispatcher = Dispatcher(name: "bench.split", queues: ["noop": width])
    dispatcher.pauseAll()
    let add = seconds { for _ in 0..<jobCount { dispatcher.add(NoOpJob()) } }
    let run = seconds {
        dispatcher.resumeAll()
        dispatcher.waitUntilAllJobsAreFinished()
    }
    return (add, run)
}

/// The same no-op work as typed definitions (`JobDefinition`, a synchronous body): what most programs
/// write.
func typedThroughput() -> Double {
    let dispatcher = Dispatcher(name: "bench.typed", queues: ["noop": width])
    return seconds {
        for _ in 0..<jobCount { dispatcher.start(SyncNoOp()) }
        dispatcher.waitUntilAllJobsAreFinished()
    }
}

func bareThroughput() -> Double {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = width
    return seconds {
        for _ in 0..<jobCount { queue.addOperation(BlockOperation {}) }
        queue.waitUntilAllOperationsAreFinished()
    }
}

func frameworkPairs() -> Double {
    let dispatcher = Dispatcher(name: "bench.pairs", queues: ["pair": width])
    return seconds {
        for _ in 0..<pairCount { dispatcher.add(PairJob()) }
        dispatcher.waitUntilAllJobsAreFinished()
    }
}

/// The same 32,000 operations straight into a bare OperationQueue, B depending on A.
///
/// - Parameter dependentsFirst: add every B before any A (a graph built "finalize steps first", as
///   DESIGN.md measured); otherwise each pair is added as A, B.
func barePairs(dependentsFirst: Bool) -> Double {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = width
    return seconds {
        var firsts: [Operation] = []
        var seconds: [Operation] = []
        firsts.reserveCapacity(pairCount)
        seconds.reserveCapacity(pairCount)
        for _ in 0..<pairCount {
            let a = BlockOperation {}
            let b = BlockOperation {}
            b.addDependency(a)
            firsts.append(a)
            seconds.append(b)
        }
        if dependentsFirst {
            queue.addOperations(seconds + firsts, waitUntilFinished: true)
        } else {
            queue.addOperations(zip(firsts, seconds).flatMap { [$0, $1] }, waitUntilFinished: true)
        }
    }
}

/// Resident bytes per job while 100,000 jobs wait in a paused dispatcher (job, manager, operation and
/// the OperationQueue's own bookkeeping). Measured in a fresh child process: in a process that already
/// freed memory, new objects reuse resident pages and the delta would show almost nothing.
///
/// - Parameter typed: Typed definitions (``SyncNoOp``, started with `Dispatcher.start`) instead of
///   ``NoOpJob``s.
func bytesPerQueuedJob(typed: Bool = false) -> Double {
    let dispatcher = Dispatcher(name: "bench.memory", queues: ["noop": width])
    dispatcher.pauseAll()
    var jobs: [Job] = []
    jobs.reserveCapacity(jobCount)
    let before = residentBytes()
    for _ in 0..<jobCount {
        if typed {
            jobs.append(dispatcher.start(SyncNoOp()).job)
        } else {
            let job = NoOpJob()
            dispatcher.add(job)
            jobs.append(job)
        }
    }
    let after = residentBytes()
    dispatcher.resumeAll()
    dispatcher.waitUntilAllJobsAreFinished()
    return Double(after - before) / Double(jobCount)
}

/// The same measure for bare BlockOperations in a suspended OperationQueue, for comparison.
func bytesPerQueuedOperation() -> Double {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = width
    queue.isSuspended = true
    let before = residentBytes()
    for _ in 0..<jobCount { queue.addOperation(BlockOperation {}) }
    let after = residentBytes()
    queue.isSuspended = false
    queue.waitUntilAllOperationsAreFinished()
    return Double(after - before) / Double(jobCount)
}

/// Runs this benchmark again as `--memory KIND` and reads the number it prints.
func measureInChild(_ kind: String) -> Double {
    let child = Process()
    child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    child.arguments = ["--memory", kind]
    let output = Pipe()
    child.standardOutput = output
    do { try child.run() } catch { return .nan }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    child.waitUntilExit()
    return Double(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? .nan
}

if let index = arguments.firstIndex(of: "--memory"), index + 1 < arguments.count {
    switch arguments[index + 1] {
    case "bare": print(bytesPerQueuedOperation())
    case "typed": print(bytesPerQueuedJob(typed: true))
    default: print(bytesPerQueuedJob())
    }
    exit(0)
}

if let index = arguments.firstIndex(of: "--instructions"), index + 1 < arguments.count {
    // One pass of a measure, for `valgrind --tool=callgrind` (instructions are repeatable on a noisy
    // machine; divide by the job count): `noop N`, `typed N`, `typed-async N`, `floor N`, `refill N`, `direct N`, or
    // `bare N` (BlockOperations in a bare OperationQueue of the same width).
    let count = index + 2 < arguments.count ? Int(arguments[index + 2]) ?? 20_000 : 20_000
    switch arguments[index + 1] {
    case "floor":
        _ = downloadShapedFloor(jobs: count)
    case "refill":
        _ = downloadShapedRefill(jobs: count)
    case "direct":
        _ = downloadShapedRefill(jobs: count, direct: true)
    case "typed", "typed-async":
        let dispatcher = Dispatcher(name: "bench.instructions", queues: ["noop": width])
        let isAsync = arguments[index + 1] == "typed-async"
        for _ in 0..<count {
            if isAsync { dispatcher.start(AsyncNoOp()) } else { dispatcher.start(SyncNoOp()) }
        }
        dispatcher.waitUntilAllJobsAreFinished()
    case "bare":
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = width
        for _ in 0..<count { queue.addOperation(BlockOperation {}) }
        queue.waitUntilAllOperationsAreFinished()
    default:
        let dispatcher = Dispatcher(name: "bench.instructions", queues: ["noop": width])
        for _ in 0..<count { dispatcher.add(NoOpJob()) }
        dispatcher.waitUntilAllJobsAreFinished()
    }
    exit(0)
}

if arguments.contains("--profile") {
    // Only the framework's throughput, for `perf record` / callgrind.
    for _ in 0..<3 { print(String(format: "%.3f s", frameworkThroughput())) }
    exit(0)
}

var results: [String: [Double]] = [:]
print("YXQueue benchmark: \(rounds) rounds, interleaved; width \(width); \(ProcessInfo.processInfo.activeProcessorCount) cores")
// Warm-up (not counted).
_ = frameworkThroughput()
_ = bareThroughput()
for round in 1...rounds {
    results["framework", default: []].append(frameworkThroughput())
    let split = frameworkSplit()
    results["split-add", default: []].append(split.add)
    results["split-run", default: []].append(split.run)
    results["bare", default: []].append(bareThroughput())
    results["typed", default: []].append(typedThroughput())
    results["framework-pairs", default: []].append(frameworkPairs())
    results["bare-pairs", default: []].append(barePairs(dependentsFirst: false))
    results["bare-pairs-parked", default: []].append(barePairs(dependentsFirst: true))
    results["bytes-per-job", default: []].append(measureInChild("framework"))
    results["bytes-per-typed-job", default: []].append(measureInChild("typed"))
    results["bytes-per-operation", default: []].append(measureInChild("bare"))
    let floor = downloadShapedFloor()
    results["floor-micros", default: []].append(floor.micros)
    results["floor-switches", default: []].append(floor.switches)
    let endsOnly = downloadShapedFloor(observing: .terminal)
    results["floor-terminal-micros", default: []].append(endsOnly.micros)
    results["floor-terminal-switches", default: []].append(endsOnly.switches)
    let refill = downloadShapedRefill()
    results["refill-micros", default: []].append(refill.micros)
    results["refill-switches", default: []].append(refill.switches)
    let refillEnds = downloadShapedRefill(observing: .terminal)
    results["refill-terminal-micros", default: []].append(refillEnds.micros)
    results["refill-terminal-switches", default: []].append(refillEnds.switches)
    let direct = downloadShapedRefill(direct: true)
    results["direct-micros", default: []].append(direct.micros)
    results["direct-switches", default: []].append(direct.switches)
    let directEnds = downloadShapedRefill(observing: .terminal, direct: true)
    results["direct-terminal-micros", default: []].append(directEnds.micros)
    results["direct-terminal-switches", default: []].append(directEnds.switches)
    print("  round \(round): done")
}

let framework = median(results["framework"]!)
let bare = median(results["bare"]!)
let frameworkGraph = median(results["framework-pairs"]!)
let bareGraph = median(results["bare-pairs"]!)
let bareParked = median(results["bare-pairs-parked"]!)
let perJob = median(results["bytes-per-job"]!)
let perOperation = median(results["bytes-per-operation"]!)

func rate(_ count: Int, _ time: Double) -> String { String(format: "%9.0f jobs/s", Double(count) / time) }
print("")
print("1. \(jobCount) no-op jobs (median of \(rounds))")
print("   Dispatcher:          \(String(format: "%7.3f s", framework))  \(rate(jobCount, framework))")
print("   bare OperationQueue: \(String(format: "%7.3f s", bare))  \(rate(jobCount, bare))")
print("   framework/bare throughput: \(String(format: "%.2f", bare / framework))  (round 1's target ≥ 0.50; issue #14's ≥ 3)")
let splitAdd = median(results["split-add"]!)
let splitRun = median(results["split-run"]!)
print("   apart: adding \(String(format: "%.3f s", splitAdd)) to a paused dispatcher, then running \(String(format: "%.3f s", splitRun)) (sum \(String(format: "%.3f s", splitAdd + splitRun)): \(String(format: "%.2f", bare / (splitAdd + splitRun)))x the bare queue, one after the other)")
let typed = median(results["typed"]!)
print("   typed definitions (synchronous body): \(String(format: "%7.3f s", typed))  \(rate(jobCount, typed))  typed/bare throughput: \(String(format: "%.2f", bare / typed))")
print("2. \(pairCount) jobs A → B (median of \(rounds))")
print("   Dispatcher:          \(String(format: "%7.3f s", frameworkGraph))")
print("   bare OperationQueue, dependents added first: \(String(format: "%7.3f s", bareParked))  → Dispatcher \(String(format: "%.1f", bareParked / frameworkGraph))× faster (target ≥ 10×)")
print("   bare OperationQueue, each pair added A, B:    \(String(format: "%7.3f s", bareGraph))  → Dispatcher \(String(format: "%.2f", bareGraph / frameworkGraph))× as fast")
print("3. memory")
print("   resident bytes per queued job:            \(String(format: "%5.0f", perJob))  (round 1's target < 2048; issue #14's ≤ 1024)")
print("   resident bytes per queued typed job:      \(String(format: "%5.0f", median(results["bytes-per-typed-job"]!)))")
print("   resident bytes per queued BlockOperation: \(String(format: "%5.0f", perOperation))  (bare queue, for comparison)")
print("   peak RSS of this process: \(String(format: "%.1f", Double(peakResidentBytes()) / 1_048_576)) MiB")
print("4. \(floorJobCount) download-shaped jobs: window 16, completed on another thread, observed (median of \(rounds))")
print("   CPU per job: \(String(format: "%.1f", median(results["floor-micros"]!))) µs (user + system, all threads)")
print("   context switches per job: \(String(format: "%.2f", median(results["floor-switches"]!)))")
let endsMicros = median(results["floor-terminal-micros"]!)
let endsSwitches = median(results["floor-terminal-switches"]!)
print("   observing terminal events only: \(String(format: "%.1f", endsMicros)) µs and \(String(format: "%.2f", endsSwitches)) context switches per job")
print("   refilled on the callback queue, on a dispatch queue: \(String(format: "%.1f", median(results["refill-micros"]!))) µs and \(String(format: "%.2f", median(results["refill-switches"]!))) context switches per job; terminal events only: \(String(format: "%.1f", median(results["refill-terminal-micros"]!))) µs and \(String(format: "%.2f", median(results["refill-terminal-switches"]!)))")
print("   refilled on a DirectQueue, as yxdownload's run does (events delivered on the completing thread): \(String(format: "%.1f", median(results["direct-micros"]!))) µs and \(String(format: "%.2f", median(results["direct-switches"]!))) context switches per job; terminal events only: \(String(format: "%.1f", median(results["direct-terminal-micros"]!))) µs and \(String(format: "%.2f", median(results["direct-terminal-switches"]!))) (target ≤ 6 µs, ≤ 0.25)")
