import XCTest

@testable import YXDownload

/// The header parser of the transfer engine: status lines, trimming, kept and skipped fields.
final class TransferResponseTests: XCTestCase {
    func testHeaderLinesAreTrimmedAndParsed() {
        var response = TransferResponse()
        response.consume(headerLine: "HTTP/1.1 301 Moved Permanently\r\n")
        response.consume(headerLine: "Location: /elsewhere\r\n")
        XCTAssertEqual(response.status, 301)
        response.consume(headerLine: "HTTP/2 206\r\n")
        response.consume(headerLine: "Content-Range:\t bytes 100-199/1000 \r\n")
        response.consume(headerLine: "ETag: \"abc\"\r\n")
        response.consume(headerLine: "content-length:100\r\n")
        response.consume(headerLine: "Retry-After : 7\r\n")
        response.consume(headerLine: "X-Other: skipped\r\n")
        response.consume(headerLine: "\r\n")
        XCTAssertEqual(response.status, 206)
        XCTAssertNil(response.headers["location"], "a new status line starts a new header set")
        XCTAssertEqual(response.etag, "\"abc\"")
        XCTAssertEqual(response.contentLength, 100)
        XCTAssertEqual(response.contentRange?.start, 100)
        XCTAssertEqual(response.contentRange?.end, 199)
        XCTAssertEqual(response.contentRange?.total, 1000)
        XCTAssertEqual(response.retryAfter, 7)
        XCTAssertNil(response.headers["x-other"], "only the fields the engine reads are kept")
    }

    func testAStatusLineWithoutAThreeDigitCodeGivesZero() {
        var response = TransferResponse()
        response.consume(headerLine: "HTTP/1.1 abc\r\n")
        XCTAssertEqual(response.status, 0)
        response.consume(headerLine: "HTTP/1.0 404 Not Found\r\n")
        XCTAssertEqual(response.status, 404)
    }
}
