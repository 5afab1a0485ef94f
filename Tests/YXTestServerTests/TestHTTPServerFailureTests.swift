import Foundation
import XCTest
import YXTestServer

/// Scripted failures, fixed statuses and redirects, over real sockets.
final class TestHTTPServerFailureTests: XCTestCase {
    func testStatusFailuresWithRetryAfterThenSuccess() async throws {
        try await withServer { server in
            let later = Date(timeIntervalSince1970: 784_111_777)
            server.serve(
                "/flaky",
                Resource(
                    .bytes(Data("ok".utf8)),
                    failures: [.status(503, retryAfter: .seconds(7)), .status(429, retryAfter: .date(later)), .status(500)]
                )
            )
            let connection = try RawHTTPConnection(port: server.port)
            let first = try connection.request("/flaky")
            XCTAssertEqual(first.status, 503)
            XCTAssertEqual(first.header("Retry-After"), "7")
            XCTAssertEqual(first.body, Data("503 Service Unavailable\n".utf8))
            let second = try connection.request("/flaky")
            XCTAssertEqual(second.status, 429)
            XCTAssertEqual(second.header("Retry-After"), "Sun, 06 Nov 1994 08:49:37 GMT")
            let third = try connection.request("/flaky")
            XCTAssertEqual(third.status, 500)
            XCTAssertNil(third.header("Retry-After"))
            let fourth = try connection.request("/flaky")
            XCTAssertEqual(fourth.status, 200)
            XCTAssertEqual(fourth.body, Data("ok".utf8))
            XCTAssertEqual(server.connectionCount, 1, "status failures keep the connection open")
        }
    }

    func testDropAfterClosesTheConnectionEarly() async throws {
        try await withServer { server in
            let size: Int64 = 300_000
            server.serve("/d.bin", Resource(.generated(size: size, seed: 6), failures: [.dropAfter(bytes: 100_000)]))
            let connection = try RawHTTPConnection(port: server.port)
            let cut = try connection.request("/d.bin")
            XCTAssertEqual(cut.status, 200)
            XCTAssertEqual(cut.header("Content-Length"), String(size), "the full length is announced")
            XCTAssertTrue(cut.endedEarly)
            XCTAssertEqual(cut.body, GeneratedContent.bytes(size: size, seed: 6, range: 0..<100_000))
            XCTAssertTrue(try connection.waitForClose())

            let again = try RawHTTPConnection(port: server.port).request("/d.bin")
            XCTAssertEqual(again.body.count, Int(size))
            XCTAssertEqual(server.connectionCount, 2)
        }
    }

    func testDropAfterAppliesToARangeResponse() async throws {
        try await withServer { server in
            server.serve("/d.bin", Resource(.generated(size: 1000, seed: 6), failures: [.dropAfter(bytes: 10)]))
            let response = try RawHTTPConnection(port: server.port).request("/d.bin", headers: ["Range": "bytes=500-"])
            XCTAssertEqual(response.status, 206)
            XCTAssertEqual(response.header("Content-Length"), "500")
            XCTAssertTrue(response.endedEarly)
            XCTAssertEqual(response.body, GeneratedContent.bytes(size: 1000, seed: 6, range: 500..<510))
        }
    }

    func testShortBodyLeavesOutTheEnd() async throws {
        try await withServer { server in
            server.serve("/s.bin", Resource(.generated(size: 10_000, seed: 6), failures: [.shortBody(missing: 1)]))
            let connection = try RawHTTPConnection(port: server.port)
            let response = try connection.request("/s.bin")
            XCTAssertEqual(response.header("Content-Length"), "10000")
            XCTAssertTrue(response.endedEarly)
            XCTAssertEqual(response.body, GeneratedContent.bytes(size: 10_000, seed: 6, range: 0..<9_999))
            XCTAssertTrue(try connection.waitForClose())
        }
    }

    func testChunkedDropEndsWithoutTheLastChunk() async throws {
        try await withServer { server in
            server.serve("/c.bin", Resource(.generated(size: 10_000, seed: 6), chunked: true, failures: [.shortBody(missing: 0)]))
            let response = try RawHTTPConnection(port: server.port).request("/c.bin")
            XCTAssertEqual(response.body.count, 10_000)
            XCTAssertTrue(response.endedEarly, "no terminating chunk")
        }
    }

    func testStallPausesThenContinues() async throws {
        try await withServer { server in
            server.serve("/st.bin", Resource(.generated(size: 50_000, seed: 6), failures: [.stall(afterBytes: 1_000, seconds: 0.3)]))
            let connection = try RawHTTPConnection(port: server.port)
            // Timed from the request: the pause lies inside that span however late this thread runs (timed
            // from the first part's arrival instead, a late reader would see part of the pause gone).
            let start = ContinuousClock.now
            try connection.sendRequest("GET", "/st.bin")
            _ = try connection.readHead()
            let firstPart = try connection.read(count: 1_000)
            let rest = try connection.read(count: 49_000)
            let elapsed = ContinuousClock.now - start
            XCTAssertEqual(firstPart + rest, GeneratedContent.bytes(size: 50_000, seed: 6))
            XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(290))
            // The connection is kept alive after the stalled response.
            XCTAssertEqual(try connection.request("/st.bin").body.count, 50_000)
            XCTAssertEqual(server.connectionCount, 1)
        }
    }

    func testEndlessStallIsEndedByTheClient() async throws {
        try await withServer { server in
            server.serve("/st", Resource(.generated(size: 1000, seed: 6), failures: [.stall(afterBytes: 10, seconds: .infinity)]))
            do {
                let connection = try RawHTTPConnection(port: server.port)
                try connection.sendRequest("GET", "/st")
                _ = try connection.readHead()
                XCTAssertEqual(try connection.read(count: 10).count, 10)
            }  // The client goes away; the stalled response does not hold up other connections or `stop()`.
            XCTAssertEqual(try RawHTTPConnection(port: server.port).request("/st").body.count, 1000)
        }
    }

    func testDisconnectClosesWithoutAResponse() async throws {
        try await withServer { server in
            server.serve("/x", Resource(.bytes(Data("x".utf8)), failures: [.disconnect]))
            let connection = try RawHTTPConnection(port: server.port)
            try connection.sendRequest("GET", "/x")
            XCTAssertTrue(try connection.waitForClose())
            XCTAssertEqual(try RawHTTPConnection(port: server.port).request("/x").body, Data("x".utf8))
        }
    }

    func testFailuresOnHead() async throws {
        try await withServer { server in
            server.serve("/h", Resource(.bytes(Data("body".utf8)), failures: [.dropAfter(bytes: 0), .status(503)]))
            let connection = try RawHTTPConnection(port: server.port)
            let head = try connection.request("HEAD", "/h")
            XCTAssertEqual(head.status, 200)
            XCTAssertEqual(head.header("Content-Length"), "4")
            XCTAssertTrue(try connection.waitForClose(), "dropAfter closes right after the headers of a HEAD")
            let second = try RawHTTPConnection(port: server.port).request("HEAD", "/h")
            XCTAssertEqual(second.status, 503)
        }
    }

    func testFixedStatusesAndUnknownPaths() async throws {
        try await withServer { server in
            server.serve("/gone", .status(410))
            server.serve("/forbidden", .status(403))
            server.serve("/busy", .status(503, retryAfter: .seconds(2)))
            let connection = try RawHTTPConnection(port: server.port)
            for _ in 0..<2 {
                let gone = try connection.request("/gone")
                XCTAssertEqual(gone.status, 410)
                XCTAssertEqual(gone.body, Data("410 Gone\n".utf8))
            }
            XCTAssertEqual(try connection.request("/forbidden").status, 403)
            let busy = try connection.request("/busy")
            XCTAssertEqual(busy.status, 503)
            XCTAssertEqual(busy.header("Retry-After"), "2")
            let missing = try connection.request("/nowhere?q=1")
            XCTAssertEqual(missing.status, 404)
            XCTAssertEqual(missing.body, Data("404 Not Found\n".utf8))
            XCTAssertEqual(server.requests(to: "/nowhere").first?.query, "q=1")
        }
    }

    func testRedirects() async throws {
        try await withServer { server in
            server.serve("/moved", .redirect(to: "/files/a.bin", status: 301))
            server.serve("/found", .redirect(to: "/files/a.bin"))
            server.serve("/temp", .redirect(to: "http://example.invalid/x", status: 307))
            server.serve("/evil", .redirect(to: "file:///etc/passwd"))
            server.serve("/other-host", .redirect(to: "//example.invalid/y", status: 308))
            server.serve("/loop-a", .redirect(to: "/loop-b"))
            server.serve("/loop-b", .redirect(to: "/loop-a"))
            let connection = try RawHTTPConnection(port: server.port)
            let origin = "http://127.0.0.1:\(server.port)"

            let moved = try connection.request("/moved")
            XCTAssertEqual(moved.status, 301)
            XCTAssertEqual(moved.header("Location"), origin + "/files/a.bin")
            XCTAssertEqual(moved.body, Data("301 Moved Permanently\n".utf8))
            let found = try connection.request("/found")
            XCTAssertEqual(found.status, 302)
            XCTAssertEqual(found.header("Location"), server.url("/files/a.bin").absoluteString)
            let temp = try connection.request("/temp")
            XCTAssertEqual(temp.status, 307)
            XCTAssertEqual(temp.header("Location"), "http://example.invalid/x")
            XCTAssertEqual(try connection.request("/evil").header("Location"), "file:///etc/passwd")
            let other = try connection.request("/other-host")
            XCTAssertEqual(other.status, 308)
            XCTAssertEqual(other.header("Location"), "//example.invalid/y")
            XCTAssertEqual(try connection.request("/loop-a").header("Location"), origin + "/loop-b")
            XCTAssertEqual(try connection.request("/loop-b").header("Location"), origin + "/loop-a")
        }
    }
}

/// Routes that send what a broken server sends: lengths, ranges and `Retry-After` values that lie.
final class TestHTTPServerBadInputTests: XCTestCase {
    func testMisstatedLengthFramesTheBodyByTheFalseLength() async throws {
        try await withServer { server in
            server.serve(
                "/m.bin",
                Resource(.generated(size: 1000, seed: 3), failures: [.misstatedLength(by: -100), .misstatedLength(by: 50)]))
            let connection = try RawHTTPConnection(port: server.port)
            let short = try connection.request("/m.bin", headers: ["Range": "bytes=200-599"])
            XCTAssertEqual(short.status, 206)
            XCTAssertEqual(short.header("Content-Range"), "bytes 200-599/1000", "the range stays true")
            XCTAssertEqual(short.header("Content-Length"), "300")
            XCTAssertEqual(short.body, GeneratedContent.bytes(size: 1000, seed: 3, range: 200..<500))
            let long = try connection.request("/m.bin", headers: ["Range": "bytes=900-"])
            XCTAssertEqual(long.header("Content-Range"), "bytes 900-999/1000")
            XCTAssertEqual(long.header("Content-Length"), "150")
            XCTAssertEqual(long.body.count, 150)
            XCTAssertEqual(long.body.prefix(100), GeneratedContent.bytes(size: 1000, seed: 3, range: 900..<1000))
            XCTAssertEqual(server.connectionCount, 1, "both responses were complete as announced")
        }
    }

    func testUnaskedRangeAnswers206WhateverWasAsked() async throws {
        try await withServer { server in
            server.serve(
                "/u.bin",
                Resource(
                    .generated(size: 1000, seed: 4), etag: "e",
                    failures: [.unaskedRange(start: 10, end: 19), .unaskedRange(start: 990, end: 5000)]))
            let connection = try RawHTTPConnection(port: server.port)
            let whole = try connection.request("/u.bin")
            XCTAssertEqual(whole.status, 206)
            XCTAssertEqual(whole.header("Content-Range"), "bytes 10-19/1000")
            XCTAssertEqual(whole.header("ETag"), "\"e\"")
            XCTAssertEqual(whole.body, GeneratedContent.bytes(size: 1000, seed: 4, range: 10..<20))
            let other = try connection.request("/u.bin", headers: ["Range": "bytes=0-99"])
            XCTAssertEqual(other.header("Content-Range"), "bytes 990-999/1000", "the end is clamped")
            XCTAssertEqual(other.body.count, 10)
        }
    }

    func testRawRetryAfterAndLongHeaderLinesAreSentAsGiven() async throws {
        try await withServer { server in
            let padding = String(repeating: "p", count: 200_000)
            server.serve(
                "/r",
                Resource(
                    .bytes(Data("ok".utf8)), failures: [.status(503, retryAfter: .raw("-5"))],
                    headers: [(name: "X-Padding", value: padding)]))
            let connection = try RawHTTPConnection(port: server.port)
            let first = try connection.request("/r")
            XCTAssertEqual(first.status, 503)
            XCTAssertEqual(first.header("Retry-After"), "-5")
            let second = try connection.request("/r")
            XCTAssertEqual(second.header("X-Padding")?.count, 200_000)
            XCTAssertEqual(second.body, Data("ok".utf8))
        }
    }
}
