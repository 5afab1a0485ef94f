import Foundation
import XCTest
@_spi(YXQueueInternals) import YXQueue
import YXTestServer

@testable import YXDownload

/// A download that waits (for a `Retry-After`, or a back-off) holds no transfer slot: other hosts go on.
/// The `Retry-After` gate belongs to one engine and to one origin (scheme, host and port).
final class HostWaitTests: DownloadTestCase {
    /// Records the order in which jobs ended.
    private final class EndLog: @unchecked Sendable {
        private let ends = Locked<[String]>([])
        private var tokens: [JobObservation] = []

        func watch(_ job: DownloadJob, as name: String) {
            tokens.append(job.observe { [ends] _, event in
                switch event {
                case .finished, .failed, .canceled: ends.withLock { $0.append(name) }
                default: break
                }
            })
        }

        var names: [String] { ends.withLock { $0 } }
    }

    /// Waits (without blocking a thread) for `count` ends; after `timeout` seconds the test fails and the
    /// jobs are canceled.
    private func waitForEnds(_ log: EndLog, _ count: Int, timeout: Double, _ what: String) async throws {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeout * 1e9)
        while log.names.count < count {
            if DispatchTime.now().uptimeNanoseconds > deadline {
                XCTFail("timed out after \(timeout) s waiting for \(what); ends so far: \(log.names)")
                dispatcher.cancelAll()
                await dispatcher.waitForAllJobs()
                throw CancellationError()
            }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
    }

    /// Host A answers 503 with `Retry-After: 1` until host B's downloads are done; with two transfer
    /// slots and A's downloads queued first, B's downloads finish while every A download still waits.
    func testAThrottledHostHoldsNoTransferSlot() async throws {
        let hostB = try await TestHTTPServer.start()
        do {
            let options = fastOptions(retries: 30)
            limitTransfers(2)
            let throttled = Array(repeating: Resource.Failure.status(503, retryAfter: .seconds(1)), count: 1000)
            for index in 0..<4 {
                server.serve("/a\(index)", Resource(.generated(size: 20_000, seed: UInt64(index)), failures: throttled))
                hostB.serve("/b\(index)", Resource(.generated(size: 20_000, seed: UInt64(10 + index))))
            }
            let log = EndLog()
            var jobs: [DownloadJob] = []
            for index in 0..<4 {
                let job = makeJob("/a\(index)", options: options)
                log.watch(job, as: "a\(index)")
                jobs.append(job)
                dispatcher.add(job)
            }
            for index in 0..<4 {
                let job = DownloadJob(
                    url: hostB.url("/b\(index)"), to: directory.appendingPathComponent("b\(index)"), options: options,
                    engine: engine)
                log.watch(job, as: "b\(index)")
                jobs.append(job)
                dispatcher.add(job)
            }
            try await waitForEnds(log, 4, timeout: 30, "host B's downloads")
            XCTAssertEqual(Set(log.names), ["b0", "b1", "b2", "b3"], "B's downloads went on while A's waited")
            // Host A recovers: its downloads, which waited without a slot, now complete.
            for index in 0..<4 {
                server.serve("/a\(index)", Resource(.generated(size: 20_000, seed: UInt64(index))))
            }
            try await waitForEnds(log, 8, timeout: 60, "host A's downloads")
            XCTAssertTrue(jobs.allSatisfy { $0.state == .finished }, "\(jobs.map(\.state))")
            for index in 0..<4 {
                XCTAssertEqual(
                    try sha256(of: directory.appendingPathComponent("a\(index)")),
                    GeneratedContent.sha256(size: 20_000, seed: UInt64(index)))
                XCTAssertEqual(
                    try sha256(of: directory.appendingPathComponent("b\(index)")),
                    GeneratedContent.sha256(size: 20_000, seed: UInt64(10 + index)))
            }
            try await hostB.stop()
        } catch {
            try? await hostB.stop()
            throw error
        }
    }

    /// A `Retry-After` on one engine does not hold the downloads of another engine.
    func testEachEngineHasItsOwnRetryAfterGate() async throws {
        server.serve("/held", Resource(.generated(size: 1000, seed: 1), failures: [.status(503, retryAfter: .seconds(30))]))
        server.serve("/free", Resource(.generated(size: 1000, seed: 2)))
        let held = makeJob("/held")
        let log = EndLog()
        log.watch(held, as: "held")
        dispatcher.add(held)
        let other = TransferEngine()
        defer { other.shutdown() }
        // Wait for the 503 to reach the first engine (its gate is then closed for 30 s).
        try await waitUntil("the first request to /held") { !server.requests(to: "/held").isEmpty }
        let free = DownloadJob(
            url: server.url("/free"), to: directory.appendingPathComponent("free"), options: fastOptions(), engine: other)
        log.watch(free, as: "free")
        dispatcher.add(free)
        try await waitForEnds(log, 1, timeout: 20, "the download on the other engine")
        XCTAssertEqual(log.names, ["free"])
        XCTAssertEqual(free.state, .finished)
        held.cancel()
        await dispatcher.waitForAllJobs()
    }

    /// The gate is per origin: the same host on another port is not held.
    func testTheGateIsPerSchemeHostAndPort() async throws {
        let otherPort = try await TestHTTPServer.start()
        do {
            server.serve("/held", Resource(.generated(size: 1000, seed: 1), failures: [.status(503, retryAfter: .seconds(30))]))
            otherPort.serve("/free", Resource(.generated(size: 1000, seed: 2)))
            let held = makeJob("/held")
            let log = EndLog()
            log.watch(held, as: "held")
            dispatcher.add(held)
            try await waitUntil("the first request to /held") { !server.requests(to: "/held").isEmpty }
            let free = DownloadJob(
                url: otherPort.url("/free"), to: directory.appendingPathComponent("free"), options: fastOptions(),
                engine: engine)
            log.watch(free, as: "free")
            dispatcher.add(free)
            try await waitForEnds(log, 1, timeout: 20, "the download from the other port")
            XCTAssertEqual(log.names, ["free"])
            held.cancel()
            await dispatcher.waitForAllJobs()
            try await otherPort.stop()
        } catch {
            try? await otherPort.stop()
            throw error
        }
    }

    /// Cancel is prompt while a download waits for its `Retry-After`, and the wait ends with it.
    func testCancelWhileWaitingForRetryAfterIsPrompt() async throws {
        server.serve("/wait", Resource(.generated(size: 1000, seed: 1), failures: [.status(503, retryAfter: .seconds(60))]))
        let job = makeJob("/wait")
        let log = EndLog()
        log.watch(job, as: "wait")
        dispatcher.add(job)
        try await waitUntil("the first request to /wait") { !server.requests(to: "/wait").isEmpty }
        job.cancel()
        try await waitForEnds(log, 1, timeout: 10, "the cancel")
        XCTAssertEqual(job.state, .canceled)
        await dispatcher.waitForAllJobs()
        XCTAssertEqual(server.requests(to: "/wait").count, 1)
    }

    /// The gate on its own: nothing held costs nothing and waits for nothing; a hold is per origin,
    /// whatever the case of the scheme and host, or an explicit default port.
    func testTheGateHoldsOneOriginAndNothingElse() throws {
        let gate = HostGate()
        let a = try XCTUnwrap(URL(string: "https://a.example/file"))
        let b = try XCTUnwrap(URL(string: "https://b.example/file"))
        XCTAssertEqual(gate.wait(for: a), 0)
        gate.hold(a, for: 30)
        XCTAssertGreaterThan(gate.wait(for: a), 25)
        XCTAssertGreaterThan(gate.wait(for: try XCTUnwrap(URL(string: "HTTPS://A.example:443/other"))), 25)
        XCTAssertEqual(gate.wait(for: b), 0, "another host")
        XCTAssertEqual(gate.wait(for: try XCTUnwrap(URL(string: "http://a.example/file"))), 0, "another scheme")
        gate.hold(b, for: 0.001)
        Thread.sleep(forTimeInterval: 0.01)
        XCTAssertEqual(gate.wait(for: b), 0, "an expired hold")
    }
}
