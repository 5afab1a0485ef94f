import Foundation
import XCTest
@_spi(YXQueueInternals) import YXQueue
import YXTestServer

@testable import YXDownload

/// How a handler's verdict on a response becomes the transfer's outcome: by type, never by message.
final class TransferVerdictTests: DownloadTestCase {
    private final class Handler: TransferHandler, @unchecked Sendable {
        let verdict: ResponseVerdict
        let received = Locked(0)
        let outcome = Locked<TransferOutcome?>(nil)

        init(_ verdict: ResponseVerdict) { self.verdict = verdict }

        func transferDidReceiveResponse(_ response: TransferResponse) -> ResponseVerdict { verdict }
        func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> DownloadError? {
            received.withLock { $0 += bytes.count }
            return nil
        }
        func transferDidComplete(_ outcome: TransferOutcome) {
            self.outcome.withLock { $0 = outcome }
        }
    }

    private func perform(_ verdict: ResponseVerdict) async throws -> Handler {
        let handler = Handler(verdict)
        let request = TransferRequest(
            url: server.url("/v.bin"), userAgent: "test", connectTimeout: 5, stallTimeout: 10, verifyTLS: true)
        engine.submit(Transfer(request: request, handler: handler))
        try await waitUntil("the transfer's end") { handler.outcome.withLock { $0 != nil } }
        return handler
    }

    func testEnoughEndsTheTransferAsASuccessWithoutItsBody() async throws {
        server.serve("/v.bin", Resource(.generated(size: 4 << 20, seed: 1)))
        let handler = try await perform(.enough)
        guard case .success(let response) = handler.outcome.withLock({ $0 }) else {
            return XCTFail("expected a success, got \(String(describing: handler.outcome.withLock { $0 }))")
        }
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(handler.received.withLock { $0 }, 0, "no byte of the body was delivered")
    }

    func testRefuseEndsTheTransferWithThatError() async throws {
        server.serve("/v.bin", Resource(.generated(size: 100_000, seed: 2)))
        let refusal = DownloadError(.unexpectedResponse, "not this one", url: "u")
        let handler = try await perform(.refuse(refusal))
        guard case .failure(let error) = handler.outcome.withLock({ $0 }) else {
            return XCTFail("expected a failure")
        }
        XCTAssertEqual(error, refusal)
        XCTAssertEqual(handler.received.withLock { $0 }, 0)
    }

    func testProceedDeliversTheBody() async throws {
        server.serve("/v.bin", Resource(.generated(size: 100_000, seed: 3)))
        let handler = try await perform(.proceed)
        guard case .success = handler.outcome.withLock({ $0 }) else { return XCTFail("expected a success") }
        XCTAssertEqual(handler.received.withLock { $0 }, 100_000)
    }
}
