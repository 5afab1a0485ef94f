import Dispatch
import Foundation
import XCTest

@testable import YXQueue

/// Records every callback of the jobs it observes and checks the delivery guarantees as they happen:
/// callbacks of one job never overlap, arrive on the job's callback queue, and follow the order
/// start → progress* → one terminal per attempt.
final class Recorder: JobDelegate, @unchecked Sendable {
    enum Entry: Equatable {
        case started, progress(Double), finished, failed, canceled
        var isTerminal: Bool { self == .finished || self == .failed || self == .canceled }
    }

    private let lock = NSLock()
    private var entries: [ObjectIdentifier: [Entry]] = [:]
    private var inFlight: Set<ObjectIdentifier> = []
    private var calls = 0
    private(set) var violations: [String] = []

    func log(of job: Job) -> [Entry] {
        lock.withLock { entries[ObjectIdentifier(job)] ?? [] }
    }

    var allViolations: [String] { lock.withLock { violations } }

    private func record(_ job: Job, _ entry: Entry) {
        dispatchPrecondition(condition: .onQueue(job.callbackQueue))
        let id = ObjectIdentifier(job)
        lock.withLock {
            if inFlight.contains(id) { violations.append("overlapping callbacks for \(job)") }
            inFlight.insert(id)
        }
        // Give an overlapping callback a chance to show itself.
        if lock.withLock({ calls += 1; return calls % 97 == 0 }) { usleep(50) }
        lock.withLock {
            var log = entries[id] ?? []
            let attemptLog = log.lastIndex(where: \.isTerminal).map { log[($0 + 1)...] } ?? log[...]
            switch entry {
            case .started:
                if !attemptLog.isEmpty { violations.append("\(job): start after \(attemptLog)") }
            case .progress(let value):
                if attemptLog.first != .started { violations.append("\(job): progress before start") }
                if case .progress(let previous)? = attemptLog.last(where: { if case .progress = $0 { true } else { false } }),
                    previous > value
                {
                    violations.append("\(job): progress went back from \(previous) to \(value)")
                }
                if value < 0 || value > 1 { violations.append("\(job): progress \(value) out of range") }
            case .finished, .failed, .canceled:
                break
            }
            log.append(entry)
            entries[id] = log
            inFlight.remove(id)
        }
    }

    func jobDidStart(_ job: Job) { record(job, .started) }
    func job(_ job: Job, didUpdateProgress progress: Double) { record(job, .progress(progress)) }
    func job(_ job: Job, didFinishWith result: (any Sendable)?) { record(job, .finished) }
    func job(_ job: Job, didFailWith error: any Error) { record(job, .failed) }
    func jobDidCancel(_ job: Job) { record(job, .canceled) }
}

/// A thread-safe counter of how many operations execute at once, per key.
final class ConcurrencyProbe: Sendable {
    private struct Counts {
        var current: [String: Int] = [:]
        var peak: [String: Int] = [:]
        var total = 0
        var peakTotal = 0
    }
    private let counts = Locked(Counts())

    func enter(_ key: String) {
        counts.withLock { c in
            c.current[key, default: 0] += 1
            c.peak[key] = max(c.peak[key] ?? 0, c.current[key]!)
            c.total += 1
            c.peakTotal = max(c.peakTotal, c.total)
        }
    }

    func leave(_ key: String) {
        counts.withLock { c in
            c.current[key, default: 0] -= 1
            c.total -= 1
        }
    }

    func peak(_ key: String) -> Int { counts.withLock { $0.peak[key] ?? 0 } }
    var peakTotal: Int { counts.withLock { $0.peakTotal } }
}

/// A one-shot gate: `wait` blocks until `open` (with a timeout so a broken test fails instead of hanging).
final class Gate: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private let opened = Locked(false)

    func open() {
        let first = opened.withLock { o -> Bool in
            defer { o = true }
            return !o
        }
        if first { semaphore.signal() }
    }

    @discardableResult
    func wait(seconds: Double = 10) -> Bool {
        let ok = semaphore.wait(timeout: .now() + seconds) == .success
        if ok { semaphore.signal() }
        return ok
    }

    var isOpen: Bool { opened.withLock { $0 } }
}

/// A thread-safe list, for recording orders.
final class Log<T: Sendable>: Sendable {
    private let items = Locked<[T]>([])
    func append(_ item: T) { items.withLock { $0.append(item) } }
    var all: [T] { items.withLock { $0 } }
}

/// A job whose single operation runs a closure given to the job.
final class ClosureJob: Job, @unchecked Sendable {
    let model: OperationModel
    let body: TaskOperation.Body

    init(
        tag: Int = 0,
        model: OperationModel = OperationModel(type: "closure", maxConcurrentOperationCount: 4),
        callbackQueue: DispatchQueue = .global(),
        body: @escaping TaskOperation.Body = { _ in nil }
    ) {
        self.model = model
        self.body = body
        super.init(tag: tag, callbackQueue: callbackQueue)
    }

    override class var managerType: JobManager.Type { ClosureJobManager.self }
    override var operationModel: OperationModel { model }
}

final class ClosureJobManager: JobManager, @unchecked Sendable {
    override func makeOperations() -> [QueueOperation] {
        let job = job as! ClosureJob
        return [TaskOperation(model: job.model, body: job.body)]
    }
}

/// A job built from a graph given as a closure (used for dependency tests).
final class GraphJob: Job, @unchecked Sendable {
    let build: @Sendable () -> [QueueOperation]
    init(tag: Int = 0, build: @escaping @Sendable () -> [QueueOperation]) {
        self.build = build
        super.init(tag: tag)
    }
    override class var managerType: JobManager.Type { GraphJobManager.self }
}

final class GraphJobManager: JobManager, @unchecked Sendable {
    override func makeOperations() -> [QueueOperation] { (job as! GraphJob).build() }
}

struct TestFailure: Error, Equatable {
    let code: Int
}

extension XCTestCase {
    /// Waits for a condition by polling (used only where no event exists to wait on).
    func eventually(timeout: Double = 10, _ condition: () -> Bool, file: StaticString = #filePath, line: UInt = #line) {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            if Date() > deadline {
                XCTFail("condition not met within \(timeout)s", file: file, line: line)
                return
            }
            usleep(1_000)
        }
    }
}
