import Foundation
import XCTest

@testable import YXTestServer

final class ByteRangeRequestTests: XCTestCase {
    func testSupportedForms() {
        XCTAssertEqual(ByteRangeRequest.evaluate("bytes=0-99", size: 1000), .satisfiable(0..<100))
        XCTAssertEqual(ByteRangeRequest.evaluate("bytes=900-", size: 1000), .satisfiable(900..<1000))
        XCTAssertEqual(ByteRangeRequest.evaluate("bytes=-100", size: 1000), .satisfiable(900..<1000))
        XCTAssertEqual(ByteRangeRequest.evaluate("bytes=-5000", size: 1000), .satisfiable(0..<1000))
        XCTAssertEqual(ByteRangeRequest.evaluate("bytes=990-5000", size: 1000), .satisfiable(990..<1000))
        XCTAssertEqual(ByteRangeRequest.evaluate(" Bytes = 5-5 ", size: 1000), .satisfiable(5..<6))
    }

    func testUnsatisfiable() {
        XCTAssertEqual(ByteRangeRequest.evaluate("bytes=1000-", size: 1000), .unsatisfiable)
        XCTAssertEqual(ByteRangeRequest.evaluate("bytes=1000-2000", size: 1000), .unsatisfiable)
        XCTAssertEqual(ByteRangeRequest.evaluate("bytes=-0", size: 1000), .unsatisfiable)
        XCTAssertEqual(ByteRangeRequest.evaluate("bytes=-10", size: 0), .unsatisfiable)
        XCTAssertEqual(ByteRangeRequest.evaluate("bytes=0-", size: 0), .unsatisfiable)
    }

    func testIgnored() {
        XCTAssertEqual(ByteRangeRequest.evaluate("bytes=5-2", size: 1000), .ignored)
        XCTAssertEqual(ByteRangeRequest.evaluate("bytes=0-1,5-6", size: 1000), .ignored)
        XCTAssertEqual(ByteRangeRequest.evaluate("items=0-1", size: 1000), .ignored)
        XCTAssertEqual(ByteRangeRequest.evaluate("bytes=a-b", size: 1000), .ignored)
        XCTAssertEqual(ByteRangeRequest.evaluate("bytes=+1-2", size: 1000), .ignored)
        XCTAssertEqual(ByteRangeRequest.evaluate("bytes=-", size: 1000), .ignored)
        XCTAssertEqual(ByteRangeRequest.evaluate("bytes=5", size: 1000), .ignored)
    }

    func testIfRangeComparison() {
        XCTAssertTrue(ResponsePlan.ifRangeMatches("\"v1\"", etag: "\"v1\"", lastModified: nil))
        XCTAssertFalse(ResponsePlan.ifRangeMatches("\"v2\"", etag: "\"v1\"", lastModified: nil))
        XCTAssertFalse(ResponsePlan.ifRangeMatches("W/\"v1\"", etag: "W/\"v1\"", lastModified: nil))
        XCTAssertFalse(ResponsePlan.ifRangeMatches("\"v1\"", etag: "W/\"v1\"", lastModified: nil))
        let date = "Sun, 06 Nov 1994 08:49:37 GMT"
        XCTAssertTrue(ResponsePlan.ifRangeMatches(date, etag: "\"v1\"", lastModified: date))
        XCTAssertFalse(ResponsePlan.ifRangeMatches(date, etag: "\"v1\"", lastModified: nil))
        XCTAssertFalse(ResponsePlan.ifRangeMatches("\"v1\"", etag: nil, lastModified: date))
    }

    func testHTTPDate() {
        XCTAssertEqual(HTTPDate.string(from: Date(timeIntervalSince1970: 784_111_777)), "Sun, 06 Nov 1994 08:49:37 GMT")
        XCTAssertEqual(HTTPDate.string(from: Date(timeIntervalSince1970: 0.9)), "Thu, 01 Jan 1970 00:00:00 GMT")
    }
}
