import Dispatch
import Foundation
import InMemoryLogging
import Logging
import MetricsTestKit
import XCTest

@_spi(YXQueueInternals) @testable import YXQueue

/// Logs through swift-log, counters and timers through swift-metrics, one observer for every job.
final class ObservabilityTests: XCTestCase {
    private struct Named: JobDefinition {
        static let name = "named"
        let fail: Bool
        var work: JobWork<Int> {
            .run(on: "q") { _ in
                if fail { throw TestFailure(code: 7) }
                return 1
            }
        }
    }

    private struct Once: JobDefinition {
        static let name = "once"
        let tries: Locked<Int>
        var retryPolicy: RetryPolicy { RetryPolicy(retries: 1, initialDelay: 0.01, scope: .allErrors) }
        var work: JobWork<Int> {
            .run(on: "q") { _ in
                if tries.withLock({ $0 += 1; return $0 }) == 1 { throw TestFailure(code: 1) }
                return 2
            }
        }
    }

    func testJobsAreLoggedAtTheRightLevels() async throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "test", factory: { _ in handler })
        logger.logLevel = .debug
        let dispatcher = Dispatcher(name: "logged", logger: logger)
        _ = try await dispatcher.run(Named(fail: false))
        _ = try? await dispatcher.run(Named(fail: true))
        _ = try await dispatcher.run(Once(tries: Locked(0)))
        await dispatcher.waitForAllJobs()
        let entries = handler.entries
        func lines(_ message: String) -> [InMemoryLogHandler.Entry] { entries.filter { $0.message.description == message } }
        XCTAssertEqual(lines("job started").count, 3)
        XCTAssertTrue(lines("job started").allSatisfy { $0.level == .debug })
        XCTAssertEqual(lines("job finished").count, 2)
        XCTAssertEqual(lines("job failed").count, 1)
        XCTAssertEqual(lines("job failed").first?.level, .warning)
        XCTAssertEqual(lines("job failed").first?.metadata["job"], "named#0")
        XCTAssertEqual(lines("job failed").first?.metadata["dispatcher"], "logged")
        XCTAssertEqual(lines("job will retry").count, 1)
        XCTAssertEqual(lines("job will retry").first?.level, .info)
        XCTAssertEqual(lines("job will retry").first?.metadata["job"], "once#0")
    }

    func testCountersAndTimersPerJobName() async throws {
        let metrics = TestMetrics()
        let dispatcher = Dispatcher(name: "measured", metricsFactory: metrics)
        for _ in 0..<3 { _ = try await dispatcher.run(Named(fail: false)) }
        _ = try? await dispatcher.run(Named(fail: true))
        _ = try await dispatcher.run(Once(tries: Locked(0)))
        let canceled = dispatcher.start(Named(fail: false))
        canceled.cancel()
        await dispatcher.waitForAllJobs()
        let named = [("dispatcher", "measured"), ("job", "named")]
        let once = [("dispatcher", "measured"), ("job", "once")]
        XCTAssertEqual(metrics.counterTotal(label: "yxqueue.jobs.started", dimensions: named), 5)
        XCTAssertEqual(metrics.counterTotal(label: "yxqueue.jobs.finished", dimensions: named) +
            metrics.counterTotal(label: "yxqueue.jobs.canceled", dimensions: named), 4)
        XCTAssertEqual(metrics.counterTotal(label: "yxqueue.jobs.failed", dimensions: named), 1)
        XCTAssertEqual(metrics.counterTotal(label: "yxqueue.jobs.retries", dimensions: once), 1)
        XCTAssertEqual(metrics.counterTotal(label: "yxqueue.jobs.finished", dimensions: once), 1)
        let queued = try metrics.expectTimer("yxqueue.job.queued", named)
        XCTAssertGreaterThanOrEqual(queued.values.count, 4)
        XCTAssertTrue(queued.values.allSatisfy { $0 >= 0 })
        let running = try metrics.expectTimer("yxqueue.job.running", named)
        XCTAssertGreaterThanOrEqual(running.values.count, 4)
    }

    func testOneObserverSeesEveryJobUntilItsTokenGoes() async throws {
        let dispatcher = Dispatcher(name: "observed")
        let seen = Log<String>()
        var token: JobObservation? = dispatcher.observe { job, event in
            if event.isTerminal { seen.append("\(job.name) \(event)") }
        }
        _ = try await dispatcher.run(Named(fail: false))
        _ = try? await dispatcher.run(Named(fail: true))
        let plain = ClosureJob(queue: "q") { _ in "x" }  // a class-layer job with no listener of its own
        dispatcher.add(plain)
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(
            seen.all.sorted(), ["ClosureJob finished", "named failed(TestFailure(code: 7))", "named finished"])
        XCTAssertNotNil(token)
        token = nil
        _ = try await dispatcher.run(Named(fail: false))
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(seen.all.count, 3, "a released token stops the observer")
    }
}
