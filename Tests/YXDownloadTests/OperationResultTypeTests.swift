import XCTest

@testable import YXDownload

/// `holds(exactly:)`, the cheap stand-in for `is` on a step's result: it must answer as `is` does for
/// the values the download steps finish with, and say no to anything else.
final class OperationResultTypeTests: XCTestCase {
    func testItTellsAStepsResultsApart() {
        let url = URL(fileURLWithPath: "/tmp/x.bin")
        let result: (any Sendable)? = DownloadResult(
            outcome: .downloaded, url: "https://example.invalid/x.bin", file: url, bytes: 1, bytesReceived: 1,
            resumedFrom: 0, sha256: nil)
        let deferral: (any Sendable)? = TransferDeferral(delay: 1, retriesUsed: 0)
        let nothing: (any Sendable)? = nil
        for value in [result, deferral, nothing] {
            XCTAssertEqual(value.holds(exactly: DownloadResult.self), value is DownloadResult)
            XCTAssertEqual(value.holds(exactly: TransferDeferral.self), value is TransferDeferral)
        }
        XCTAssertTrue(result.holds(exactly: DownloadResult.self))
        XCTAssertFalse(result.holds(exactly: TransferDeferral.self))
        XCTAssertTrue(deferral.holds(exactly: TransferDeferral.self))
        XCTAssertFalse(nothing.holds(exactly: DownloadResult.self))
        // A result wrapped in an optional inside the existential: `is` looks through the optional, this
        // check does not. No step finishes that way (they pass a `DownloadResult` itself, or an optional
        // one that Swift converts, below); this pins down the one difference the helper's comment names.
        let wrapped: (any Sendable)? = .some(Optional(result as? DownloadResult) as any Sendable)
        XCTAssertTrue(wrapped is DownloadResult)
        XCTAssertFalse(wrapped.holds(exactly: DownloadResult.self))
        // A result converted from an optional one, as Swift converts it, is still seen.
        let optional: DownloadResult? = result as? DownloadResult
        let converted: (any Sendable)? = optional
        XCTAssertTrue(converted.holds(exactly: DownloadResult.self))
    }
}
