import Foundation
import XCTest

@testable import YXDownload

/// The threads the downloader starts without Foundation's `Thread`, and libcurl's set-up run ahead on one.
final class DetachedThreadTests: XCTestCase {
    func testTheClosureRunsOnceOnAThreadOfItsOwn() {
        let ran = expectation(description: "ran")
        let caller = pthread_self()
        XCTAssertTrue(
            DetachedThread.start {
                XCTAssertEqual(pthread_equal(pthread_self(), caller), 0)
                ran.fulfill()
            })
        wait(for: [ran], timeout: 10)
    }

    func testManyThreadsEachRunTheirClosure() {
        let count = 200
        let ran = expectation(description: "ran")
        ran.expectedFulfillmentCount = count
        for _ in 0..<count {
            XCTAssertTrue(DetachedThread.start { ran.fulfill() })
        }
        wait(for: [ran], timeout: 30)
    }

    func testLibcurlSetUpStartedAheadIsDoneWhenTheWaitReturns() {
        LibcurlSetUp.startInBackground()
        LibcurlSetUp.startInBackground()  // once only
        LibcurlSetUp.waitIfStarted()
        XCTAssertNil(TransferLane.globalFailure)
    }

    func testTheTLSWarmUpStartedAheadIsDoneWhenTheWaitReturns() {
        LibcurlSetUp.warmUpTLSInBackground()
        LibcurlSetUp.warmUpTLSInBackground()  // once only
        LibcurlSetUp.waitIfStarted()
        XCTAssertTrue(LibcurlSetUp.tlsWarmedUp.load(ordering: .acquiring))
        XCTAssertNil(TransferLane.globalFailure)
    }
}
