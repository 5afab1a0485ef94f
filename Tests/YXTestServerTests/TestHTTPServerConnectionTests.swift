import Foundation
import XCTest
import YXTestServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keep-alive, counting, recording and teardown, over real sockets.
final class TestHTTPServerConnectionTests: XCTestCase {
    func testRequestsAndConnectionsAreCounted() async throws {
        try await withServer { server in
            server.serve("/a", Resource(.bytes(Data("a".utf8))))
            let first = try RawHTTPConnection(port: server.port)
            _ = try first.request("/a?x=1", headers: ["X-Test": "one"])
            _ = try first.request("HEAD", "/a")
            XCTAssertEqual(server.requestCount, 2)
            XCTAssertEqual(server.connectionCount, 1, "two requests on one keep-alive connection")

            let recorded = server.requests(to: "/a")
            XCTAssertEqual(recorded.count, 2)
            XCTAssertEqual(recorded[0].method, "GET")
            XCTAssertEqual(recorded[0].path, "/a")
            XCTAssertEqual(recorded[0].query, "x=1")
            XCTAssertEqual(recorded[0].version, "HTTP/1.1")
            XCTAssertEqual(recorded[0].header("x-test"), "one")
            XCTAssertEqual(recorded[0].header("HOST"), "127.0.0.1")
            XCTAssertNil(recorded[0].header("Range"))
            XCTAssertNil(recorded[1].query)
            XCTAssertEqual(recorded[0].connection, recorded[1].connection)

            let second = try RawHTTPConnection(port: server.port)
            _ = try second.request("/b")
            XCTAssertEqual(server.requestCount, 3)
            XCTAssertEqual(server.connectionCount, 2)
            XCTAssertNotEqual(server.allRequests[2].connection, recorded[0].connection)

            server.resetCounters()
            XCTAssertEqual(server.requestCount, 0)
            XCTAssertEqual(server.connectionCount, 0)
            XCTAssertTrue(server.requests(to: "/a").isEmpty)
            _ = try second.request("/a")
            XCTAssertEqual(server.requestCount, 1)
            XCTAssertEqual(server.connectionCount, 0, "the connection was accepted before the reset")
        }
    }

    /// Responses that overlap are counted together: a paced one still under way while another connection
    /// is answered makes two; one after another on a connection, one.
    func testTheMostResponsesAtOnceAreCounted() async throws {
        try await withServer { server in
            var slow = Resource(.generated(size: 100_000, seed: 2))
            slow.bytesPerSecond = 1_000  // 100 s: still under way while the other request is answered
            server.serve("/slow", slow)
            server.serve("/quick", Resource(.bytes(Data("quick".utf8))))
            XCTAssertEqual(server.mostResponsesAtOnce, 0)
            var first: RawHTTPConnection? = try RawHTTPConnection(port: server.port)
            try first?.sendRequest("GET", "/slow")
            XCTAssertEqual(try first?.readHead().status, 200)
            let second = try RawHTTPConnection(port: server.port)
            XCTAssertEqual(try second.request("/quick").body, Data("quick".utf8))
            XCTAssertEqual(server.mostResponsesAtOnce, 2)

            first = nil  // closes the connection: its response ends there
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                server.resetCounters()
                if server.mostResponsesAtOnce == 0 { break }
                try await Task.sleep(nanoseconds: 10_000_000)
            }
            XCTAssertEqual(server.mostResponsesAtOnce, 0, "no response is under way after the reset")
            _ = try second.request("/quick")
            _ = try second.request("/quick")
            XCTAssertEqual(server.mostResponsesAtOnce, 1)
        }
    }

    func testPipelinedRequestsAreAnsweredInOrder() async throws {
        try await withServer { server in
            server.serve("/one", Resource(.bytes(Data("one".utf8))))
            server.serve("/two", Resource(.generated(size: 300_000, seed: 1)))
            server.serve("/three", Resource(.bytes(Data("three".utf8))))
            let connection = try RawHTTPConnection(port: server.port)
            try connection.send(
                "GET /two HTTP/1.1\r\nHost: x\r\n\r\nGET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /three HTTP/1.1\r\nHost: x\r\n\r\n"
            )
            XCTAssertEqual(try connection.readResponse().body.count, 300_000)
            XCTAssertEqual(try connection.readResponse().body, Data("one".utf8))
            XCTAssertEqual(try connection.readResponse().body, Data("three".utf8))
            XCTAssertEqual(server.allRequests.map(\.path), ["/two", "/one", "/three"])
        }
    }

    func testConnectionCloseIsHonoured() async throws {
        try await withServer { server in
            server.serve("/a", Resource(.bytes(Data("a".utf8))))
            let connection = try RawHTTPConnection(port: server.port)
            let response = try connection.request("/a", headers: ["Connection": "close"])
            XCTAssertEqual(response.header("Connection"), "close")
            XCTAssertEqual(response.body, Data("a".utf8))
            XCTAssertTrue(try connection.waitForClose())

            let old = try RawHTTPConnection(port: server.port)
            try old.send("GET /a HTTP/1.0\r\n\r\n")
            XCTAssertEqual(try old.readResponse().body, Data("a".utf8))
            XCTAssertTrue(try old.waitForClose(), "HTTP/1.0 without keep-alive is closed")
        }
    }

    func testMalformedRequestGets400AndAClose() async throws {
        try await withServer { server in
            let connection = try RawHTTPConnection(port: server.port)
            try connection.send("NOT HTTP AT ALL\r\n\r\n")
            let response = try connection.readResponse()
            XCTAssertEqual(response.status, 400)
            XCTAssertTrue(try connection.waitForClose())
            XCTAssertEqual(server.requestCount, 0)
        }
    }

    func testHalfClosedClientStillGetsItsAnswers() async throws {
        try await withServer { server in
            server.serve("/big", Resource(.generated(size: 2_000_000, seed: 1)))
            let connection = try RawHTTPConnection(port: server.port)
            try connection.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\nHEAD /big HTTP/1.1\r\nHost: x\r\n\r\n")
            connection.shutdownWrite()
            XCTAssertEqual(try connection.readResponse().body, GeneratedContent.bytes(size: 2_000_000, seed: 1))
            XCTAssertEqual(try connection.readResponse(method: "HEAD").status, 200)
            XCTAssertTrue(try connection.waitForClose())
        }
    }

    func testStopClosesEveryConnectionAndTheListener() async throws {
        let server = try await TestHTTPServer.start()
        server.serve("/stalled", Resource(.generated(size: 10_000, seed: 3), failures: [.stall(afterBytes: 100, seconds: 600)]))
        server.serve("/slow", Resource(.generated(size: 1_000_000, seed: 3), bytesPerSecond: 1_000))
        server.serve("/a", Resource(.bytes(Data("a".utf8))))

        let stalled = try RawHTTPConnection(port: server.port)
        try stalled.sendRequest("GET", "/stalled")
        _ = try stalled.readHead()
        XCTAssertEqual(try stalled.read(count: 100).count, 100)

        let slow = try RawHTTPConnection(port: server.port)
        try slow.sendRequest("GET", "/slow")
        _ = try slow.readHead()
        XCTAssertEqual(try slow.read(count: 10).count, 10)

        let idle = try RawHTTPConnection(port: server.port)
        _ = try idle.request("/a")

        try await server.stop()

        // Each read would time out after 10 s if the connection were still open.
        _ = try stalled.readUntilClosed()
        _ = try slow.readUntilClosed()
        XCTAssertTrue(try idle.waitForClose())
        XCTAssertThrowsError(try RawHTTPConnection(port: server.port)) { error in
            guard case RawHTTPError.system("connect", let code) = error else {
                return XCTFail("unexpected \(error)")
            }
            XCTAssertEqual(code, ECONNREFUSED)
        }
        try await server.stop()  // idempotent
    }

    /// A lifted pace ends the slow responses under way (a paced body, a stall under way, a stall still
    /// to come in the body) and the pace of the routes served then; a route served later is paced, and a stall that a later request consumes
    /// still happens. Each read below would time out after 10 s at the old pace (1,000 bytes a second,
    /// a 600 s stall).
    func testALiftedPaceEndsSlowResponsesAndTheRoutesPace() async throws {
        try await withServer { server in
            let content = BodySource.generated(size: 200_000, seed: 4)
            server.serve("/slow", Resource(content, bytesPerSecond: 1_000))
            server.serve("/stalled", Resource(content, failures: [.stall(afterBytes: 100, seconds: 600), .stall(afterBytes: 100, seconds: 600)]))

            let slow = try RawHTTPConnection(port: server.port)
            try slow.sendRequest("GET", "/slow")
            _ = try slow.readHead()
            let slowStart = try slow.read(count: 10)
            let stalled = try RawHTTPConnection(port: server.port)
            try stalled.sendRequest("GET", "/stalled")
            _ = try stalled.readHead()
            let stalledStart = try stalled.read(count: 100)
            // Paced, and its stall still to come.
            server.serve("/stall-ahead", Resource(content, bytesPerSecond: 1_000, failures: [.stall(afterBytes: 100_000, seconds: 600)]))
            let ahead = try RawHTTPConnection(port: server.port)
            try ahead.sendRequest("GET", "/stall-ahead")
            _ = try ahead.readHead()
            let aheadStart = try ahead.read(count: 10)

            await server.liftPace()
            let whole = content.bytes(in: 0..<200_000)
            XCTAssertEqual(slowStart + (try slow.read(count: 200_000 - 10)), whole)
            XCTAssertEqual(stalledStart + (try stalled.read(count: 200_000 - 100)), whole)
            XCTAssertEqual(aheadStart + (try ahead.read(count: 200_000 - 10)), whole)

            // Later requests to the route, on the same connection and on a new one: not paced.
            XCTAssertEqual(try slow.request("/slow").body, whole)
            XCTAssertEqual(try RawHTTPConnection(port: server.port).request("/slow").body, whole)

            // The route's second failure is a stall, and its next request consumes it.
            let later = try RawHTTPConnection(port: server.port, timeout: 1)
            try later.sendRequest("GET", "/stalled")
            _ = try later.readHead()
            XCTAssertEqual(try later.read(count: 100).count, 100)
            XCTAssertThrowsError(try later.read(count: 1), "the stall of a later request")

            // A route served after the lift is paced: its 20th byte at 20 bytes a second comes 0.95 s after the first.
            server.serve("/slow", Resource(content, bytesPerSecond: 20))
            let paced = try RawHTTPConnection(port: server.port)
            let start = ContinuousClock.now
            try paced.sendRequest("GET", "/slow")
            _ = try paced.readHead()
            XCTAssertEqual(try paced.read(count: 20).count, 20)
            XCTAssertGreaterThanOrEqual(ContinuousClock.now - start, .milliseconds(900), "the pace of a route served after the lift")
        }
    }

    func testServersAreIndependent() async throws {
        try await withServer { first in
            try await withServer { second in
                XCTAssertNotEqual(first.port, second.port)
                first.serve("/a", Resource(.bytes(Data("1".utf8))))
                XCTAssertEqual(try RawHTTPConnection(port: second.port).request("/a").status, 404)
                XCTAssertEqual(try RawHTTPConnection(port: first.port).request("/a").body, Data("1".utf8))
                XCTAssertEqual(first.requestCount, 1)
                XCTAssertEqual(second.requestCount, 1)
            }
        }
    }
}
