// YXQueue benchmark: the framework next to a bare OperationQueue, in one run.
//
//   swift run -c release YXQueueBenchmark [--rounds N]
//
// Prints, as medians over N rounds (default 5):
//   1. throughput: 100,000 no-op jobs through a Dispatcher vs 100,000 BlockOperations through a bare
//      OperationQueue (both with maxConcurrentOperationCount 5);
//   2. dependencies: 16,000 jobs each A → B, vs the same 32,000 operations with addDependency in a
//      bare OperationQueue;
//   3. memory: resident memory per queued (not yet running) job, and the process's peak RSS.
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
    static let model = OperationModel(type: "noop", maxConcurrentOperationCount: width)
    override var operationModel: OperationModel { Self.model }
}

/// A job of two operations, B waiting for A.
final class PairJob: Job, @unchecked Sendable {
    static let model = OperationModel(type: "pair", maxConcurrentOperationCount: width)
    override class var managerType: JobManager.Type { PairManager.self }
}

final class PairManager: JobManager, @unchecked Sendable {
    override func makeOperations() -> [QueueOperation] {
        let a = QueueOperation(model: PairJob.model)
        let b = QueueOperation(model: PairJob.model)
        b.addPrerequisite(a)
        return [a, b]
    }
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
    let dispatcher = Dispatcher(name: "bench.throughput")
    return seconds {
        for _ in 0..<jobCount { dispatcher.add(NoOpJob()) }
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
    let dispatcher = Dispatcher(name: "bench.pairs")
    return seconds {
        for _ in 0..<pairCount { dispatcher.add(PairJob()) }
        dispatcher.waitUntilAllJobsAreFinished()
    }
}

func barePairs() -> Double {
    let queue = OperationQueue()
    queue.maxConcurrentOperationCount = width
    return seconds {
        var operations: [Operation] = []
        operations.reserveCapacity(pairCount * 2)
        for _ in 0..<pairCount {
            let a = BlockOperation {}
            let b = BlockOperation {}
            b.addDependency(a)
            operations.append(b)
            operations.append(a)
        }
        queue.addOperations(operations, waitUntilFinished: true)
    }
}

/// Resident bytes per job while 100,000 jobs wait in a paused dispatcher.
func bytesPerQueuedJob() -> Double {
    let dispatcher = Dispatcher(name: "bench.memory")
    dispatcher.pauseAll()
    let before = residentBytes()
    for _ in 0..<jobCount { dispatcher.add(NoOpJob()) }
    let after = residentBytes()
    dispatcher.resumeAll()
    dispatcher.waitUntilAllJobsAreFinished()
    return Double(after - before) / Double(jobCount)
}

var results: [String: [Double]] = [:]
print("YXQueue benchmark: \(rounds) rounds, interleaved; width \(width); \(ProcessInfo.processInfo.activeProcessorCount) cores")
// Warm-up (not counted).
_ = frameworkThroughput()
_ = bareThroughput()
for round in 1...rounds {
    results["framework", default: []].append(frameworkThroughput())
    results["bare", default: []].append(bareThroughput())
    results["framework-pairs", default: []].append(frameworkPairs())
    results["bare-pairs", default: []].append(barePairs())
    results["bytes-per-job", default: []].append(bytesPerQueuedJob())
    print("  round \(round): done")
}

let framework = median(results["framework"]!)
let bare = median(results["bare"]!)
let frameworkGraph = median(results["framework-pairs"]!)
let bareGraph = median(results["bare-pairs"]!)
let perJob = median(results["bytes-per-job"]!)

func rate(_ count: Int, _ time: Double) -> String { String(format: "%9.0f jobs/s", Double(count) / time) }
print("")
print("1. \(jobCount) no-op jobs (median of \(rounds))")
print("   Dispatcher:          \(String(format: "%7.3f s", framework))  \(rate(jobCount, framework))")
print("   bare OperationQueue: \(String(format: "%7.3f s", bare))  \(rate(jobCount, bare))")
print("   framework/bare throughput: \(String(format: "%.2f", bare / framework))  (target ≥ 0.50)")
print("2. \(pairCount) jobs A → B (median of \(rounds))")
print("   Dispatcher:          \(String(format: "%7.3f s", frameworkGraph))")
print("   bare OperationQueue: \(String(format: "%7.3f s", bareGraph))")
print("   speed-up: \(String(format: "%.1f", bareGraph / frameworkGraph))×  (target ≥ 10×)")
print("3. memory")
print("   per queued job: \(String(format: "%.0f", perJob)) bytes  (target < 2048)")
print("   peak RSS: \(String(format: "%.1f", Double(peakResidentBytes()) / 1_048_576)) MiB")
