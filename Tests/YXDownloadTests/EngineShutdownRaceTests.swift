import Foundation
import XCTest
@_spi(YXQueueInternals) import YXQueue
import YXTestServer

@testable import YXDownload

/// Commands that race `shutdown()`: no use of a freed curl handle (run under AddressSanitizer and
/// Thread Sanitizer to see it), and every transfer ends exactly once.
final class EngineShutdownRaceTests: DownloadTestCase {
    /// Counts how each transfer ended.
    private final class CountingHandler: TransferHandler, @unchecked Sendable {
        let completions = Locked<[String]>([])
        func transferDidReceiveResponse(_ response: TransferResponse) -> ResponseVerdict { .proceed }
        func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> DownloadError? { nil }
        func transferDidComplete(_ outcome: TransferOutcome) {
            let word: String
            switch outcome {
            case .success: word = "success"
            case .failure: word = "failure"
            case .canceled: word = "canceled"
            }
            completions.withLock { $0.append(word) }
        }
    }

    func testSpeedLimitSubmitAndCancelRacingShutdownFromManyThreads() throws {
        server.serve("/r.bin", Resource(.generated(size: 100_000, seed: 1)))
        let request = TransferRequest(
            url: server.url("/r.bin"), userAgent: "test", connectTimeout: 5, stallTimeout: 5, verifyTLS: true)
        for round in 0..<40 {
            let engine = TransferEngine(lanes: 2)
            let handlers = (0..<4).map { _ in CountingHandler() }
            let ready = DispatchGroup()
            let go = DispatchSemaphore(value: 0)
            let done = DispatchGroup()
            for thread in 0..<6 {
                ready.enter()
                done.enter()
                Thread.detachNewThread {
                    ready.leave()
                    go.wait()
                    switch thread {
                    case 0:
                        engine.shutdown()
                    case 1, 2:
                        for step in 0..<300 { engine.setMaxSpeed(bytesPerSecond: step.isMultiple(of: 2) ? nil : 1 << 20) }
                    default:
                        let handler = handlers[thread - 3]
                        for _ in 0..<20 {
                            let transfer = Transfer(request: request, handler: handler)
                            engine.submit(transfer)
                            engine.cancel(transfer)
                        }
                    }
                    done.leave()
                }
            }
            ready.wait()
            for _ in 0..<6 { go.signal() }
            XCTAssertEqual(done.wait(timeout: .now() + 60), .success, "round \(round): a command hung")
            // After the shutdown: commands are refused, and a new transfer completes as canceled.
            engine.setMaxSpeed(bytesPerSecond: 1000)
            engine.shutdown()
            let late = CountingHandler()
            engine.submit(Transfer(request: request, handler: late))
            XCTAssertEqual(late.completions.withLock { $0 }, ["canceled"])
            for handler in handlers[..<3] {
                XCTAssertEqual(handler.completions.withLock { $0.count }, 20, "round \(round): each transfer ends once")
            }
        }
    }
}
