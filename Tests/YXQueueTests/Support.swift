import Dispatch
import Foundation
import XCTest

@_spi(YXQueueInternals) @testable import YXQueue

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

/// A one-shot gate: waiters block (threads) or suspend (tasks) until `open`, with a timeout so that a
/// broken test fails instead of hanging.
final class Gate: Sendable {
    private struct State {
        var isOpen = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let semaphore = DispatchSemaphore(value: 0)
    private let state = Locked(State())

    func open() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>]? in
            guard !s.isOpen else { return nil }
            s.isOpen = true
            defer { s.waiters = [] }
            return s.waiters
        }
        guard let waiters else { return }
        semaphore.signal()
        for waiter in waiters { waiter.resume() }
    }

    /// Blocks the calling thread. Not for async code: it would hold one of the few threads of the
    /// cooperative pool; use ``opened(seconds:)`` there.
    @discardableResult
    func wait(seconds: Double = 30) -> Bool {
        let ok = semaphore.wait(timeout: .now() + seconds) == .success
        if ok { semaphore.signal() }
        return ok
    }

    /// Suspends the calling task until the gate opens (or `seconds` passed: returns false).
    @discardableResult
    func opened(seconds: Double = 30) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = self.state.withLock { s -> Bool in
                        if s.isOpen { return true }
                        s.waiters.append(continuation)
                        return false
                    }
                    if now { continuation.resume() }
                }
                return true
            }
            group.addTask {
                try? await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
                return false
            }
            let first = await group.next() ?? false
            if !first { self.open() }  // releases the other child; the test fails on `false`
            group.cancelAll()
            return first
        }
    }

    var isOpen: Bool { state.withLock { $0.isOpen } }
}

/// A thread-safe list, for recording orders.
final class Log<T: Sendable>: Sendable {
    private let items = Locked<[T]>([])
    func append(_ item: T) { items.withLock { $0.append(item) } }
    var all: [T] { items.withLock { $0 } }
}

/// An operation whose `async` closure returns an untyped result (tests of the class layer).
typealias AnyTaskOperation = TaskOperation<(any Sendable)?>

/// A job whose single operation runs a closure given to the job.
final class ClosureJob: Job, @unchecked Sendable {
    let operationQueue: String
    let body: AnyTaskOperation.Body

    init(
        tag: Int = 0,
        queue: String = "closure",
        callbackQueue: DispatchQueue = .global(),
        retryPolicy: RetryPolicy = .never,
        deadline: Duration? = nil,
        body: @escaping AnyTaskOperation.Body = { _ in nil }
    ) {
        self.operationQueue = queue
        self.body = body
        super.init(tag: tag, callbackQueue: callbackQueue, retryPolicy: retryPolicy, deadline: deadline)
    }

    override class var managerClass: JobManager.Type { ClosureJobManager.self }
    override var queue: String { operationQueue }
}

final class ClosureJobManager: JobManager, @unchecked Sendable {
    override func makeOperations() -> [QueueOperation] {
        guard let job = job as? ClosureJob else { return [] }
        return [AnyTaskOperation(queue: job.operationQueue, body: job.body)]
    }
}

/// A job built from a graph given as a closure (used for dependency tests).
final class TestGraphJob: Job, @unchecked Sendable {
    let build: @Sendable () -> [QueueOperation]
    init(tag: Int = 0, build: @escaping @Sendable () -> [QueueOperation]) {
        self.build = build
        super.init(tag: tag)
    }
    override class var managerClass: JobManager.Type { TestGraphJobManager.self }
}

final class TestGraphJobManager: JobManager, @unchecked Sendable {
    override func makeOperations() -> [QueueOperation] { (job as? TestGraphJob)?.build() ?? [] }
}

struct TestFailure: Error, Equatable {
    let code: Int
}

extension XCTestCase {
    /// Waits for a condition by polling (used only where no event exists to wait on). Blocks the thread:
    /// for synchronous tests only.
    func eventually(timeout: Double = 30, _ condition: () -> Bool, file: StaticString = #filePath, line: UInt = #line) {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            if Date() > deadline {
                XCTFail("condition not met within \(timeout)s", file: file, line: line)
                return
            }
            usleep(1_000)
        }
    }

    /// Waits for a condition by polling, suspending (not blocking) between checks: for async tests.
    func eventually(
        timeout: Double = 30, _ condition: () -> Bool, file: StaticString = #filePath, line: UInt = #line
    ) async {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            if Date() > deadline {
                XCTFail("condition not met within \(timeout)s", file: file, line: line)
                return
            }
            try? await Task.sleep(nanoseconds: 1_000_000)
        }
    }
}

extension XCTestCase {
    /// Runs `body` and fails the test unless it throws `CancellationError`.
    func assertThrowsCancellation(
        file: StaticString = #filePath, line: UInt = #line, _ body: () async throws -> Void
    ) async {
        do {
            try await body()
            XCTFail("expected cancellation", file: file, line: line)
        } catch {
            XCTAssertTrue(error is CancellationError, "\(error)", file: file, line: line)
        }
    }

    /// Suspends until `gate` opens; fails the test if it did not within `seconds`.
    func assertOpens(
        _ gate: Gate, seconds: Double = 30, _ message: String = "", file: StaticString = #filePath, line: UInt = #line
    ) async {
        let opened = await gate.opened(seconds: seconds)
        XCTAssertTrue(opened, message.isEmpty ? "the gate did not open within \(seconds)s" : message, file: file, line: line)
    }
}
