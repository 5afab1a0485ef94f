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

    func testEveryKeptFieldIsReadAndARedirectsFieldsAreForgotten() {
        var response = TransferResponse()
        response.consume(headerLine: "HTTP/1.1 302 Found\r\n")
        for field in TransferResponse.keptFieldNames { response.consume(headerLine: "\(field.uppercased()): old-\(field)\r\n") }
        for field in TransferResponse.keptFieldNames { XCTAssertEqual(response.headers[field], "old-\(field)") }
        response.consume(headerLine: "HTTP/1.1 200 OK\r\n")
        for field in TransferResponse.keptFieldNames { XCTAssertNil(response.headers[field], field) }
        response.consume(headerLine: "Last-Modified: Tue, 24 Nov 2026 10:00:00 GMT\r\n")
        response.consume(headerLine: "Transfer-Encoding: Chunked\r\n")
        response.consume(headerLine: "ETag: \"1\"\r\n")
        response.consume(headerLine: "ETag: \"2\"\r\n")
        XCTAssertEqual(response.lastModified, "Tue, 24 Nov 2026 10:00:00 GMT")
        XCTAssertTrue(response.isChunked)
        XCTAssertEqual(response.etag, "\"2\"", "the last value wins")
        XCTAssertNil(response.contentLength)
    }

    func testAStatusLineWithoutAThreeDigitCodeGivesZero() {
        var response = TransferResponse()
        response.consume(headerLine: "HTTP/1.1 abc\r\n")
        XCTAssertEqual(response.status, 0)
        response.consume(headerLine: "HTTP/1.0 404 Not Found\r\n")
        XCTAssertEqual(response.status, 404)
    }

    // The cases below were found by `scripts/fuzz response-headers` (issue 12); each broke a property that
    // the rest of the engine relies on.

    private func response(_ lines: String...) -> TransferResponse {
        var response = TransferResponse()
        for line in lines { response.consume(headerLine: line + "\r\n") }
        return response
    }

    /// A response of `status` (a status line) with the field `lines`.
    private func response(_ status: String, fields lines: [String]) -> TransferResponse {
        var response = TransferResponse()
        for line in [status] + lines { response.consume(headerLine: line + "\r\n") }
        return response
    }

    func testContentRangeIsUsedOnlyWhenItsNumbersAreConsistent() {
        func range(_ value: String) -> [Int64?]? {
            response("HTTP/1.1 206 Partial Content", "Content-Range: \(value)").contentRange
                .map { [$0.start, $0.end, $0.total] }
        }
        XCTAssertEqual(range("bytes 100-199/1000"), [100, 199, 1000])
        XCTAssertEqual(range("bytes 0-0/*"), [0, 0, nil])
        XCTAssertEqual(range("bytes */1000"), [nil, nil, 1000])
        XCTAssertEqual(range("bytes */0"), [nil, nil, 0])
        // Fuzzer inputs: a total that is not a number gave (nil, nil, nil); start > end was accepted.
        XCTAssertNil(range("bytes */8\u{FFFD}27"))
        XCTAssertNil(range("bytes */1000\rt-"))
        XCTAssertNil(range("bytes 200-199/1000"))
        XCTAssertNil(range("bytes */*"))
        XCTAssertNil(range("bytes 0-1000/1000"), "the last byte is before the total")
        XCTAssertNil(range("bytes 5--1/10"))
        XCTAssertNil(range("bytes +1-+2/3"))
        XCTAssertNil(range("bytes -/10"))
        XCTAssertNil(range("bytes 0-9223372036854775808/9223372036854775809"), "overflow")
    }

    func testContentLengthIsDigitsOnly() {
        // Fuzzer inputs: "Content-Length: -206" and "Content-Length:-100" gave negative lengths.
        XCTAssertNil(response("HTTP/1.1 200 OK", "Content-Length: -206").contentLength)
        XCTAssertNil(response("HTTP/1.1 200 OK", "Content-Length:-100").contentLength)
        XCTAssertNil(response("HTTP/1.1 200 OK", "Content-Length: +5").contentLength)
        XCTAssertNil(response("HTTP/1.1 200 OK", "Content-Length: 99999999999999999999").contentLength)
        XCTAssertEqual(response("HTTP/1.1 200 OK", "Content-Length: 0").contentLength, 0)
        XCTAssertEqual(response("HTTP/1.1 200 OK", "Content-Length: 12").contentLength, 12)
    }

    func testAContentLengthThatIsNoLengthIsInvalid() {
        // A user test: `Content-Length: 99999999999999999999999` and 5 bytes gave a 5-byte file.
        for value in ["99999999999999999999999", "-5", "+5", "abc", "", "5 5", "0x10", "5,"] {
            let parsed = response("HTTP/1.1 200 OK", "Content-Length: \(value)")
            XCTAssertNil(parsed.contentLength, value.debugDescription)
            XCTAssertTrue(parsed.hasInvalidContentLength, value.debugDescription)
        }
        XCTAssertFalse(response("HTTP/1.1 200 OK").hasInvalidContentLength, "no length is not an invalid one")
        XCTAssertFalse(response("HTTP/1.1 200 OK", "Content-Length: 12").hasInvalidContentLength)
        let chunked = response("HTTP/1.1 200 OK", "Content-Length: abc", "Transfer-Encoding: chunked")
        XCTAssertFalse(chunked.hasInvalidContentLength, "chunked framing makes the length irrelevant")
    }

    func testRepeatedContentLengthsMustAgree() {
        // A user test: `Content-Length: 5` then `Content-Length: 7` was taken for 7 (the last one).
        let disagreeing = response("HTTP/1.1 200 OK", "Content-Length: 5", "Content-Length: 7")
        XCTAssertNil(disagreeing.contentLength)
        XCTAssertTrue(disagreeing.hasInvalidContentLength)
        XCTAssertTrue(response("HTTP/1.1 200 OK", "Content-Length: 5, 7").hasInvalidContentLength)
        XCTAssertEqual(response("HTTP/1.1 200 OK", "Content-Length: 5", "content-length: 5").contentLength, 5)
        XCTAssertEqual(response("HTTP/1.1 200 OK", "Content-Length: 5 , 5").contentLength, 5)
        // A redirect's lengths are not the final response's.
        let redirected = response("HTTP/1.1 302 Found", "Content-Length: 5", "HTTP/1.1 200 OK", "Content-Length: 7")
        XCTAssertEqual(redirected.contentLength, 7)
        XCTAssertFalse(redirected.hasInvalidContentLength)
    }

    func testRetryAfterIsFiniteAndNeverNegative() throws {
        // Fuzzer input: "Retry-After: 1e400120" gave an infinite wait.
        for value in ["1e400120", "inf", "-inf", "nan", "Infinity"] {
            XCTAssertNil(response("HTTP/1.1 429 Too Many Requests", "Retry-After: \(value)").retryAfter, value)
        }
        XCTAssertNil(response("HTTP/1.1 429 Too Many Requests", "Retry-After: -5").retryAfter, "not delay-seconds")
        XCTAssertEqual(response("HTTP/1.1 429 Too Many Requests", "Retry-After: 120").retryAfter, 120)
        let date = try XCTUnwrap(
            response("HTTP/1.1 503 Unavailable", "Retry-After: Fri, 31 Dec 2100 23:59:59 GMT").retryAfter)
        XCTAssertTrue(date.isFinite && date > 0)
    }

    func testARetryAfterThatIsNotASCIIIsIgnoredAndDoesNotCrash() {
        // Fuzzer input: "Retry-After: Sunday" + U+05BC + ...; on Linux `DateFormatter.date(from:)` stops the
        // process on such text ("Incorrect range CFRange"), so a 429 or 503 with it crashed `yxdownload`.
        XCTAssertNil(response("HTTP/1.1 503 Service Unavailable", "Retry-After: Sun\u{05BC}").retryAfter)
        XCTAssertNil(
            response("HTTP/1.1 503 Service Unavailable", "Retry-After: Sunday\u{05BC}\u{FFFD}\"x\"").retryAfter)
        XCTAssertNil(HTTPDate.parse("Fri, 31 Dec 2100 23:59:59 GMT\u{0}"))
        XCTAssertNotNil(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT"))
        XCTAssertNotNil(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT"))
        XCTAssertNotNil(HTTPDate.parse("Sun Nov  6 08:49:37 1994"))
    }

    func testHTTPDatesOfTheThreeFormsAreTheSameMoment() {
        // RFC 9110 §5.6.7's example, in IMF-fixdate and the two obsolete forms.
        for text in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            XCTAssertEqual(HTTPDate.parse(text)?.timeIntervalSince1970, 784_111_777, text)
        }
        XCTAssertEqual(HTTPDate.parse("Fri, 31 Dec 2100 23:59:59 GMT")?.timeIntervalSince1970, 4_133_980_799)
        for text in ["", "Sunday", "2015", "12:00:00", "Wed, 21 Oct 2015 07:28:00 GM", "garbage words here", "1e400120"] {
            XCTAssertNil(HTTPDate.parse(text), text)
        }
    }

    func testChunkedIsTheLastCodingNotAWordInside() {
        XCTAssertTrue(response("HTTP/1.1 200 OK", "Transfer-Encoding: chunked").isChunked)
        XCTAssertTrue(response("HTTP/1.1 200 OK", "Transfer-Encoding: gzip, Chunked").isChunked)
        XCTAssertFalse(response("HTTP/1.1 200 OK", "Transfer-Encoding: notchunked").isChunked, "found by a review")
        XCTAssertFalse(response("HTTP/1.1 200 OK", "Transfer-Encoding: chunked, gzip").isChunked)
        XCTAssertFalse(response("HTTP/1.1 200 OK").isChunked)
        let disguised = response("HTTP/1.1 200 OK", "Transfer-Encoding: notchunked", "Content-Length: 99999999999999999999999")
        XCTAssertTrue(disguised.hasInvalidContentLength, "a coding named like chunked does not excuse the length")
    }

    /// When a part's range request gets the whole file (`200`) that it may read from: the file's length
    /// and the parts' own strong validator (found by a review: a date-only resume took any tag for one).
    func testTheWholeFileForAPartMustBeOfTheSameVersion() {
        func whole(_ lines: String...) -> TransferResponse { response("HTTP/1.1 200 OK", fields: lines) }
        let date = "Tue, 24 Nov 2026 10:00:00 GMT"
        let other = "Wed, 25 Nov 2026 10:00:00 GMT"
        let tagged = ResumeState(url: "u", etag: "\"v1\"", total: 10, segments: [])
        XCTAssertTrue(DownloadSession.isWholeOfSameVersion(whole("Content-Length: 10", "ETag: \"v1\""), as: tagged))
        XCTAssertFalse(DownloadSession.isWholeOfSameVersion(whole("Content-Length: 10", "ETag: \"v2\""), as: tagged))
        XCTAssertFalse(DownloadSession.isWholeOfSameVersion(whole("Content-Length: 10", "ETag: W/\"v1\""), as: tagged))
        XCTAssertFalse(DownloadSession.isWholeOfSameVersion(whole("Content-Length: 10"), as: tagged), "no validator")
        XCTAssertFalse(DownloadSession.isWholeOfSameVersion(whole("Content-Length: 9", "ETag: \"v1\""), as: tagged))
        XCTAssertFalse(
            DownloadSession.isWholeOfSameVersion(whole("Transfer-Encoding: chunked", "ETag: \"v1\""), as: tagged),
            "no length to compare")
        let dated = ResumeState(url: "u", lastModified: date, total: 10, segments: [])
        XCTAssertTrue(DownloadSession.isWholeOfSameVersion(whole("Content-Length: 10", "Last-Modified: \(date)"), as: dated))
        XCTAssertFalse(DownloadSession.isWholeOfSameVersion(whole("Content-Length: 10", "ETag: \"v1\""), as: dated))
        XCTAssertFalse(DownloadSession.isWholeOfSameVersion(whole("Content-Length: 10", "Last-Modified: \(other)"), as: dated))
        // A weak tag is no validator for bytes: the date decides.
        let weak = ResumeState(url: "u", etag: "W/\"w\"", lastModified: date, total: 10, segments: [])
        XCTAssertTrue(
            DownloadSession.isWholeOfSameVersion(whole("Content-Length: 10", "ETag: W/\"w\"", "Last-Modified: \(date)"), as: weak))
        XCTAssertFalse(
            DownloadSession.isWholeOfSameVersion(whole("Content-Length: 10", "ETag: W/\"w\"", "Last-Modified: \(other)"), as: weak))
        XCTAssertFalse(DownloadSession.isWholeOfSameVersion(whole("Content-Length: 10", "ETag: W/\"w\""), as: weak))
        XCTAssertFalse(
            DownloadSession.isWholeOfSameVersion(whole("Content-Length: 10"), as: ResumeState(url: "u", total: 10, segments: [])),
            "parts without a validator are never combined")
    }

    func testValidatorsWithControlCharactersAreNotSentBack() {
        // Fuzzer inputs: a bare CR or a vertical tab inside ETag or Last-Modified, which go back to the
        // server in If-Range.
        XCTAssertNil(response("HTTP/1.1 200 OK", "ETag: W/\"w\"\r\u{80}").etag)
        XCTAssertNil(response("HTTP/1.1 200 OK", "ETag: \"abc\"\rct 2015 04:28:00 GMT").etag)
        XCTAssertNil(response("HTTP/1.1 200 OK", "Last-Modified: Wed, 21 Oct 2015 07:28:00 GM\u{0B}").lastModified)
        XCTAssertNil(response("HTTP/1.1 200 OK", "ETag: \"a\u{0}b\"").etag)
        XCTAssertEqual(response("HTTP/1.1 200 OK", "ETag: W/\"w\"").etag, "W/\"w\"")
        XCTAssertEqual(
            response("HTTP/1.1 200 OK", "Last-Modified: Wed, 21 Oct 2015 07:28:00 GMT").lastModified,
            "Wed, 21 Oct 2015 07:28:00 GMT")
    }

    /// What counts as another version of a file when a resume gets a 206 (found by a helper's review):
    /// another length or tag, weak or not; not a tag's weakness alone, and not an unquoted tag that a
    /// resume mark kept (it reads back as a `Last-Modified`, which is compared only when it is a date).
    func testAnotherVersionIsTheLengthOrTheTagNotItsSpelling() {
        func response(_ lines: String...) -> TransferResponse { self.response("HTTP/1.1 206 Partial Content", fields: lines) }
        let date = "Tue, 24 Nov 2026 10:00:00 GMT"
        let tagged = ResumeState(url: "u", etag: "\"v1\"", total: 10, segments: [])
        XCTAssertFalse(DownloadSession.isAnotherVersion(response("ETag: \"v1\""), total: 10, than: tagged))
        XCTAssertTrue(DownloadSession.isAnotherVersion(response("ETag: \"v2\""), total: 10, than: tagged))
        XCTAssertTrue(DownloadSession.isAnotherVersion(response("ETag: \"v1\""), total: 11, than: tagged))
        XCTAssertFalse(DownloadSession.isAnotherVersion(response("ETag: W/\"v1\""), total: 10, than: tagged))
        let weak = ResumeState(url: "u", etag: "W/\"v1\"", total: 10, segments: [])
        XCTAssertTrue(DownloadSession.isAnotherVersion(response("ETag: W/\"v2\""), total: 10, than: weak))
        let dated = ResumeState(url: "u", lastModified: date, total: 10, segments: [])
        XCTAssertFalse(DownloadSession.isAnotherVersion(response("Last-Modified: " + date), total: 10, than: dated))
        XCTAssertTrue(DownloadSession.isAnotherVersion(response("Last-Modified: Wed, 25 Nov 2026 10:00:00 GMT"), total: 10, than: dated))
        // A mark's unquoted tag comes back as a Last-Modified that is no date: not compared with one.
        let mark = ResumeMark.state(from: "1 \(ResumeMark.hash("u")) 10 abc123", url: "u")!
        XCTAssertFalse(DownloadSession.isAnotherVersion(response("ETag: abc123", "Last-Modified: " + date), total: 10, than: mark))
        XCTAssertTrue(DownloadSession.isAnotherVersion(response("ETag: abc124", "Last-Modified: " + date), total: 10, than: mark))
        // The asctime form of a date is a date too (found by a second review).
        let asctime = ResumeState(url: "u", lastModified: "Sun Nov  6 08:49:37 1994", total: 10, segments: [])
        XCTAssertTrue(DownloadSession.isAnotherVersion(response("Last-Modified: Sun Nov  7 08:49:37 1994"), total: 10, than: asctime))
        XCTAssertFalse(DownloadSession.isAnotherVersion(response(), total: nil, than: tagged), "nothing to compare")
    }
}
