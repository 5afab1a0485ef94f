import Foundation
import XCTest
import YXTestServer

/// Content, ranges, validators and versions, over real sockets.
final class TestHTTPServerContentTests: XCTestCase {
    func testFullGetOfGeneratedContentMatchesTheDigest() async throws {
        try await withServer { server in
            let size: Int64 = 5 * 1024 * 1024 + 3
            server.serve("/files/a.bin", Resource(.generated(size: size, seed: 11)))
            let connection = try RawHTTPConnection(port: server.port)
            let response = try connection.request("/files/a.bin")
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.header("content-length"), String(size))
            XCTAssertEqual(response.header("Accept-Ranges"), "bytes")
            XCTAssertEqual(response.header("Content-Type"), "application/octet-stream")
            XCTAssertFalse(response.endedEarly)
            XCTAssertEqual(sha256Hex(response.body), GeneratedContent.sha256(size: size, seed: 11))
        }
    }

    func testLiteralBytesAndURL() async throws {
        try await withServer { server in
            server.serve("/hello.txt", Resource(.bytes(Data("hello\n".utf8)), contentType: "text/plain"))
            XCTAssertEqual(server.url("/hello.txt").absoluteString, "http://127.0.0.1:\(server.port)/hello.txt")
            XCTAssertEqual(server.url("x").absoluteString, "http://127.0.0.1:\(server.port)/x")
            XCTAssertEqual(server.baseURL.absoluteString, "http://127.0.0.1:\(server.port)")
            let response = try RawHTTPConnection(port: server.port).request("/hello.txt")
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.body, Data("hello\n".utf8))
            XCTAssertEqual(response.header("Content-Type"), "text/plain")
        }
    }

    func testRangeRequestsReturnExactlyTheRequestedBytes() async throws {
        try await withServer { server in
            let size: Int64 = 100_000
            server.serve("/r.bin", Resource(.generated(size: size, seed: 5)))
            let connection = try RawHTTPConnection(port: server.port)
            let cases: [(header: String, range: Range<Int64>)] = [
                ("bytes=100-199", 100..<200),
                ("bytes=99990-", 99_990..<100_000),
                ("bytes=-50", 99_950..<100_000),
                ("bytes=0-0", 0..<1),
                ("bytes=99000-200000", 99_000..<100_000),
            ]
            for (header, range) in cases {
                let response = try connection.request("/r.bin", headers: ["Range": header])
                XCTAssertEqual(response.status, 206, header)
                XCTAssertEqual(
                    response.header("Content-Range"),
                    "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(size)",
                    header
                )
                XCTAssertEqual(response.header("Content-Length"), String(range.count), header)
                XCTAssertEqual(response.body, GeneratedContent.bytes(size: size, seed: 5, range: range), header)
            }
            XCTAssertEqual(server.connectionCount, 1)
        }
    }

    func testUnsatisfiableRangeGives416() async throws {
        try await withServer { server in
            server.serve("/r.bin", Resource(.generated(size: 1000, seed: 5)))
            let connection = try RawHTTPConnection(port: server.port)
            for header in ["bytes=1000-", "bytes=5000-6000", "bytes=-0"] {
                let response = try connection.request("/r.bin", headers: ["Range": header])
                XCTAssertEqual(response.status, 416, header)
                XCTAssertEqual(response.header("Content-Range"), "bytes */1000", header)
                XCTAssertEqual(response.body.count, 0, header)
            }
            // The connection is still usable.
            XCTAssertEqual(try connection.request("/r.bin").body.count, 1000)
        }
    }

    func testInvalidOrMultipleRangesAreIgnored() async throws {
        try await withServer { server in
            server.serve("/r.bin", Resource(.generated(size: 1000, seed: 5)))
            let connection = try RawHTTPConnection(port: server.port)
            for header in ["bytes=500-100", "bytes=0-1,5-6", "lines=1-2"] {
                let response = try connection.request("/r.bin", headers: ["Range": header])
                XCTAssertEqual(response.status, 200, header)
                XCTAssertNil(response.header("Content-Range"), header)
                XCTAssertEqual(response.body.count, 1000, header)
            }
        }
    }

    func testIgnoresRangeAlwaysSendsTheFullBody() async throws {
        try await withServer { server in
            server.serve("/r.bin", Resource(.generated(size: 1000, seed: 5), ignoresRange: true))
            let response = try RawHTTPConnection(port: server.port).request("/r.bin", headers: ["Range": "bytes=10-19"])
            XCTAssertEqual(response.status, 200)
            XCTAssertNil(response.header("Content-Range"))
            XCTAssertNil(response.header("Accept-Ranges"))
            XCTAssertEqual(response.body, GeneratedContent.bytes(size: 1000, seed: 5))
        }
    }

    func testValidatorsAndIfRange() async throws {
        try await withServer { server in
            let modified = Date(timeIntervalSince1970: 784_111_777)
            let httpDate = "Sun, 06 Nov 1994 08:49:37 GMT"
            server.serve("/v.bin", Resource(.generated(size: 1000, seed: 8), etag: "v1", lastModified: modified))
            server.serve("/plain.bin", Resource(.generated(size: 1000, seed: 8)))
            let connection = try RawHTTPConnection(port: server.port)

            let head = try connection.request("HEAD", "/v.bin")
            XCTAssertEqual(head.header("ETag"), "\"v1\"")
            XCTAssertEqual(head.header("Last-Modified"), httpDate)

            func status(_ path: String, ifRange: String) throws -> (Int, Int) {
                let response = try connection.request(path, headers: ["Range": "bytes=10-19", "If-Range": ifRange])
                return (response.status, response.body.count)
            }
            XCTAssertTrue(try status("/v.bin", ifRange: "\"v1\"") == (206, 10))
            XCTAssertTrue(try status("/v.bin", ifRange: httpDate) == (206, 10))
            XCTAssertTrue(try status("/v.bin", ifRange: "\"v0\"") == (200, 1000))
            XCTAssertTrue(try status("/v.bin", ifRange: "W/\"v1\"") == (200, 1000))
            XCTAssertTrue(try status("/v.bin", ifRange: "Mon, 07 Nov 1994 08:49:37 GMT") == (200, 1000))
            XCTAssertTrue(try status("/plain.bin", ifRange: "\"v1\"") == (200, 1000))
        }
    }

    func testVersionsAdvanceWithEachRequest() async throws {
        try await withServer { server in
            server.serve(
                "/changing",
                .versions([
                    .init(.bytes(Data("first".utf8)), etag: "v1"),
                    .init(.bytes(Data("second".utf8)), etag: "\"v2\""),
                ])
            )
            let connection = try RawHTTPConnection(port: server.port)
            let first = try connection.request("/changing")
            let second = try connection.request("/changing", headers: ["Range": "bytes=0-1", "If-Range": "\"v1\""])
            let third = try connection.request("/changing")
            XCTAssertEqual(first.header("ETag"), "\"v1\"")
            XCTAssertEqual(first.body, Data("first".utf8))
            XCTAssertEqual(second.status, 200, "If-Range with the old ETag gets the full new body")
            XCTAssertEqual(second.header("ETag"), "\"v2\"")
            XCTAssertEqual(second.body, Data("second".utf8))
            XCTAssertEqual(third.body, Data("second".utf8), "the last version repeats")
        }
    }

    func testServeReplacesTheRoute() async throws {
        try await withServer { server in
            server.serve("/f", Resource(.bytes(Data("old".utf8)), etag: "a"))
            let connection = try RawHTTPConnection(port: server.port)
            XCTAssertEqual(try connection.request("/f").body, Data("old".utf8))
            server.serve("/f", Resource(.bytes(Data("new".utf8)), etag: "b"))
            let response = try connection.request("/f")
            XCTAssertEqual(response.body, Data("new".utf8))
            XCTAssertEqual(response.header("ETag"), "\"b\"")
            server.removeRoute("/f")
            XCTAssertEqual(try connection.request("/f").status, 404)
        }
    }

    func testHeadSendsHeadersOnly() async throws {
        try await withServer { server in
            server.serve("/h.bin", Resource(.generated(size: 4096, seed: 2), headers: [("Content-Disposition", "attachment; filename=\"h.bin\"")]))
            let connection = try RawHTTPConnection(port: server.port)
            let head = try connection.request("HEAD", "/h.bin")
            XCTAssertEqual(head.status, 200)
            XCTAssertEqual(head.header("Content-Length"), "4096")
            XCTAssertEqual(head.header("Content-Disposition"), "attachment; filename=\"h.bin\"")
            // Had the server sent a body after the HEAD, it would be read as the next status line.
            let get = try connection.request("/h.bin", headers: ["Range": "bytes=0-9"])
            XCTAssertEqual(get.status, 206)
            XCTAssertEqual(get.body, GeneratedContent.bytes(size: 4096, seed: 2, range: 0..<10))
            XCTAssertEqual(server.requests(to: "/h.bin").map(\.method), ["HEAD", "GET"])
        }
    }

    func testChunkedBody() async throws {
        try await withServer { server in
            let size: Int64 = 200_000
            server.serve("/c.bin", Resource(.generated(size: size, seed: 4), chunked: true))
            let connection = try RawHTTPConnection(port: server.port)
            let response = try connection.request("/c.bin")
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.header("Transfer-Encoding"), "chunked")
            XCTAssertNil(response.header("Content-Length"))
            XCTAssertFalse(response.endedEarly)
            XCTAssertEqual(response.body, GeneratedContent.bytes(size: size, seed: 4))
            XCTAssertGreaterThan(response.chunkSizes.count, 1)
            XCTAssertTrue(response.chunkSizes.allSatisfy { $0 <= 64 * 1024 })
            // HEAD of a chunked resource: no body, not even the last chunk.
            let head = try connection.request("HEAD", "/c.bin")
            XCTAssertEqual(head.header("Transfer-Encoding"), "chunked")
            XCTAssertEqual(try connection.request("/c.bin", headers: ["Range": "bytes=0-2"]).body.count, 3)
        }
    }

    func testThrottledBodyTakesAtLeastItsTime() async throws {
        try await withServer { server in
            // 100 kB at 400 kB/s: pieces of 20 kB, the last one due 0.2 s after the first.
            server.serve("/slow", Resource(.generated(size: 100_000, seed: 1), bytesPerSecond: 400_000))
            let connection = try RawHTTPConnection(port: server.port)
            let start = ContinuousClock.now
            let response = try connection.request("/slow")
            let elapsed = ContinuousClock.now - start
            XCTAssertEqual(response.body, GeneratedContent.bytes(size: 100_000, seed: 1))
            XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(190))
        }
    }

    func testLargeBodyStreamsWithBackPressure() async throws {
        try await withServer { server in
            let size: Int64 = 64 * 1024 * 1024
            server.serve("/big.bin", Resource(.generated(size: size, seed: 99)))
            let connection = try RawHTTPConnection(port: server.port)
            try connection.sendRequest("GET", "/big.bin")
            let head = try connection.readHead()
            XCTAssertEqual(head.status, 200)
            var hasher = IncrementalSHA256()
            var received: Int64 = 0
            while received < size {
                let piece = try connection.read(count: Int(min(4 << 20, size - received)))
                XCTAssertFalse(piece.isEmpty)
                if piece.isEmpty { break }
                hasher.update(piece)
                received += Int64(piece.count)
            }
            XCTAssertEqual(received, size)
            XCTAssertEqual(hasher.finalize(), GeneratedContent.sha256(size: size, seed: 99))
        }
    }
}
