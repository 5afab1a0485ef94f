import Foundation
import XCTest
@_spi(YXQueueInternals) import YXQueue
import YXTestServer

@testable import YXDownload

/// A lane gathers the body pieces curl hands its write callback (16 KiB at most each) and hands them to
/// the transfer's handler in larger pieces: when another transfer's bytes come, when its buffer is full,
/// and at the end of each turn. The bytes arrive whole and in order, and a handler that refuses gathered
/// bytes ends its transfer with its error.
final class WriteCoalescingTests: DownloadTestCase {
    /// Keeps every byte, the size of every piece, and the end.
    private final class KeepingHandler: TransferHandler, @unchecked Sendable {
        struct Seen {
            var body = Data()
            var pieces: [Int] = []
            var outcome: TransferOutcome?
        }

        let seen = Locked(Seen())
        /// Called with the bytes received so far, before they are kept; an error refuses the piece.
        let onPiece: @Sendable (Int) -> DownloadError?

        init(onPiece: @escaping @Sendable (Int) -> DownloadError? = { _ in nil }) {
            self.onPiece = onPiece
        }

        func transferDidReceiveResponse(_ response: TransferResponse) -> ResponseVerdict { .proceed }

        func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> DownloadError? {
            if let error = onPiece(seen.withLock { $0.body.count }) { return error }
            seen.withLock {
                $0.body.append(contentsOf: bytes)
                $0.pieces.append(bytes.count)
            }
            return nil
        }

        func transferDidComplete(_ outcome: TransferOutcome) {
            seen.withLock { $0.outcome = outcome }
        }

        var ended: Bool { seen.withLock { $0.outcome != nil } }
    }

    private func request(_ path: String) -> TransferRequest {
        TransferRequest(url: server.url(path), userAgent: "test", connectTimeout: 10, stallTimeout: 30, verifyTLS: true)
    }

    /// A handler that pauses now and then, so that the server's bytes pile up in the socket and a turn
    /// of the lane receives more than one 16 KiB piece of curl's.
    private static func pausing(every interval: Int) -> @Sendable (Int) -> DownloadError? {
        let next = Locked(0)
        return { received in
            let pause = next.withLock { threshold -> Bool in
                guard received >= threshold else { return false }
                threshold = received + interval
                return true
            }
            if pause { usleep(30_000) }
            return nil
        }
    }

    func testTheBodyReachesTheHandlerWholeInOrderAndInPiecesLargerThanCurlsWriteSize() async throws {
        let size: Int64 = 8 << 20
        server.serve("/big.bin", Resource(.generated(size: size, seed: 71)))
        let handler = KeepingHandler(onPiece: Self.pausing(every: 1 << 20))
        engine.submit(Transfer(request: request("/big.bin"), handler: handler))
        try await waitUntil(timeout: 60, "the transfer's end") { handler.ended }

        let seen = handler.seen.withLock { $0 }
        guard case .success = seen.outcome else { return XCTFail("expected a success, got \(String(describing: seen.outcome))") }
        XCTAssertEqual(seen.body.count, Int(size))
        XCTAssertTrue(seen.body == GeneratedContent.bytes(size: size, seed: 71), "the body differs from what was served")
        // curl's write callback never gets more than CURL_MAX_WRITE_SIZE (16 KiB): a larger piece was gathered.
        XCTAssertGreaterThan(seen.pieces.max() ?? 0, 16 * 1024, "no piece larger than 16 KiB: \(seen.pieces.prefix(20))")
        XCTAssertLessThanOrEqual(seen.pieces.max() ?? 0, TransferLane.coalescingCapacity)
    }

    func testTwoTransfersOnOneLaneEachGetTheirOwnBytes() async throws {
        // One lane: both bodies come through the same turns, their pieces interleaved in its buffer.
        engine = TransferEngine(lanes: 1)
        let size: Int64 = 3 << 20
        server.serve("/a.bin", Resource(.generated(size: size, seed: 72)))
        server.serve("/b.bin", Resource(.generated(size: size + 12_345, seed: 73)))
        let a = KeepingHandler(onPiece: Self.pausing(every: 512 << 10))
        let b = KeepingHandler(onPiece: Self.pausing(every: 700 << 10))
        engine.submit(Transfer(request: request("/a.bin"), handler: a))
        engine.submit(Transfer(request: request("/b.bin"), handler: b))
        try await waitUntil(timeout: 60, "both ends") { a.ended && b.ended }

        for (handler, seed, length) in [(a, UInt64(72), size), (b, UInt64(73), size + 12_345)] {
            let seen = handler.seen.withLock { $0 }
            guard case .success = seen.outcome else { return XCTFail("expected a success, got \(String(describing: seen.outcome))") }
            XCTAssertTrue(seen.body == GeneratedContent.bytes(size: length, seed: seed), "body of seed \(seed) differs")
        }
    }

    func testARefusalOnOneTransferLeavesTheOtherOnTheSameLaneWhole() async throws {
        // The refused bytes are handed over at the end of a turn or when the other transfer's bytes come
        // in the middle of one (then the refusing transfer ends after the turn): either way it ends with
        // its handler's error, and the other one's body is whole.
        engine = TransferEngine(lanes: 1)
        let size: Int64 = 4 << 20
        server.serve("/a.bin", Resource(.generated(size: size, seed: 75)))
        server.serve("/b.bin", Resource(.generated(size: size, seed: 76)))
        let refusal = DownloadError(.fileSystem, "the disk is full (test)", url: "u")
        let a = KeepingHandler { received in received >= 1 << 20 ? refusal : nil }
        let b = KeepingHandler()
        engine.submit(Transfer(request: request("/a.bin"), handler: a))
        engine.submit(Transfer(request: request("/b.bin"), handler: b))
        try await waitUntil(timeout: 60, "both ends") { a.ended && b.ended }

        guard case .failure(let error) = a.seen.withLock({ $0.outcome }) else {
            return XCTFail("expected the refusal, got \(String(describing: a.seen.withLock { $0.outcome }))")
        }
        XCTAssertEqual(error, refusal)
        let other = b.seen.withLock { $0 }
        guard case .success = other.outcome else { return XCTFail("expected a success, got \(String(describing: other.outcome))") }
        XCTAssertTrue(other.body == GeneratedContent.bytes(size: size, seed: 76), "the other body differs")
    }

    func testAHandlerThatRefusesGatheredBytesEndsItsTransferWithItsError() async throws {
        server.serve("/r.bin", Resource(.generated(size: 8 << 20, seed: 74)))
        let refusal = DownloadError(.fileSystem, "the disk is full (test)", url: "u")
        let pauses = Self.pausing(every: 256 << 10)
        let handler = KeepingHandler { received in
            if received >= 1 << 20 { return refusal }
            return pauses(received)
        }
        engine.submit(Transfer(request: request("/r.bin"), handler: handler))
        try await waitUntil(timeout: 60, "the transfer's end") { handler.ended }

        let seen = handler.seen.withLock { $0 }
        guard case .failure(let error) = seen.outcome else {
            return XCTFail("expected the handler's error, got \(String(describing: seen.outcome))")
        }
        XCTAssertEqual(error, refusal)
        XCTAssertLessThan(seen.body.count, 8 << 20, "bytes were still handed over after the refusal")
        XCTAssertTrue(
            seen.body == GeneratedContent.bytes(size: 8 << 20, seed: 74, range: 0..<Int64(seen.body.count)),
            "what was kept before the refusal is not the body's beginning")
    }
}
