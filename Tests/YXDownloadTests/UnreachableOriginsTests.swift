import Foundation
import XCTest
import YXQueue

@testable import YXDownload

/// A server that a download could not connect to through all of its retries is remembered for as long
/// as those retries took, per origin (scheme, host and port), and then forgotten. The command's behaviour
/// (the second download of a list fails at once) is checked against the real binary in
/// `FailureMessageTests`.
final class UnreachableOriginsTests: XCTestCase {
    func testTheMarkLastsAsLongAsTheRetriesWaited() {
        XCTAssertEqual(UnreachableOrigins.backOffTotal(RetryPolicy()), 31, "1 + 2 + 4 + 8 + 16 s by default")
        XCTAssertEqual(UnreachableOrigins.backOffTotal(RetryPolicy(retries: 0)), 0)
        XCTAssertEqual(
            UnreachableOrigins.backOffTotal(RetryPolicy(retries: 8, initialDelay: 1, maxDelay: 10)), 55,
            "1 + 2 + 4 + 8, then four waits held at maxDelay")
        XCTAssertEqual(
            UnreachableOrigins.backOffTotal(RetryPolicy(retries: 1_000_000, initialDelay: 1, maxDelay: 1)), 64,
            "at most 64 waits are summed")
    }

    func testAMarkHoldsForItsOriginAloneAndLapses() throws {
        let origins = UnreachableOrigins()
        let down = try XCTUnwrap(URL(string: "http://127.0.0.1:9/a.iso"))
        XCTAssertFalse(origins.isUnreachable(down))
        origins.markUnreachable(down, retriedUnder: RetryPolicy(retries: 0))
        XCTAssertFalse(origins.isUnreachable(down), "a download without retries marks nothing")

        origins.markUnreachable(down, retriedUnder: RetryPolicy(retries: 1, initialDelay: 0.2, jitter: 0))
        XCTAssertTrue(origins.isUnreachable(try XCTUnwrap(URL(string: "HTTP://127.0.0.1:9/other/b.iso"))))
        XCTAssertTrue(origins.isUnreachable(try XCTUnwrap(URL(string: "http://127.0.0.1:9/a.iso?x=1"))))
        XCTAssertFalse(origins.isUnreachable(try XCTUnwrap(URL(string: "http://127.0.0.1:10/a.iso"))), "another port")
        XCTAssertFalse(origins.isUnreachable(try XCTUnwrap(URL(string: "https://127.0.0.1:9/a.iso"))), "another scheme")
        XCTAssertFalse(origins.isUnreachable(try XCTUnwrap(URL(string: "http://127.0.0.2:9/a.iso"))), "another host")

        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertFalse(origins.isUnreachable(down), "the mark lapses after the 0.2 s its retries took")
    }
}
