import Foundation
import XCTest
import YXQueue
import YXTestServer

@testable import YXDownload

/// What a broken or hostile server sends: each gives a clear failure, and never a wrong file.
final class BadServerInputTests: DownloadTestCase {
    /// Nothing but `.part` files and their sidecars of failed downloads; no final file other than `kept`.
    private func assertNoFinalFile(except kept: Set<String> = [], file: StaticString = #filePath, line: UInt = #line) {
        let finals = files().filter { !$0.hasSuffix(".part") && !$0.hasSuffix(".part.meta") }
        XCTAssertEqual(Set(finals), kept, file: file, line: line)
    }

    /// Found by the header fuzzer: a probe answered with a length near Int64.max made the plan of the
    /// segments overflow (`total + count - 1`) and stopped the process. Now the download fails clearly.
    func testALengthNearTheLargestIntegerFailsClearly() async throws {
        server.serve(
            "/huge",
            Resource(
                .generated(size: 100_000, seed: 9), etag: "h",
                headers: [(name: "Content-Range", value: "bytes 0-0/9223372036854775807")]))
        let error = downloadError(await run(makeJob("/huge", options: fastOptions(connections: 4, retries: 0))))
        XCTAssertNotNil(error, "a length the server cannot have does not give a file")
        assertNoFinalFile()
    }

    func testAnOversizedHeaderLineFailsClearly() async throws {
        let padding = String(repeating: "x", count: 300_000)
        server.serve("/big-header", Resource(.generated(size: 5000, seed: 1), headers: [(name: "X-Padding", value: padding)]))
        let error = downloadError(await run(makeJob("/big-header")))
        XCTAssertEqual(error?.isTransient, false, "\(String(describing: error))")
        XCTAssertTrue(error?.message.lowercased().contains("header") ?? false, error?.message ?? "")
        XCTAssertEqual(server.requests(to: "/big-header").count, 1, "not retried")
        assertNoFinalFile()
    }

    func testAContentLengthThatDisagreesWithContentRangeFailsClearly() async throws {
        let size: Int64 = 4 << 20
        // Segmented: the probe is answered truly, then every part's answer announces a length that is off.
        for (path, delta) in [("/short", Int64(-1000)), ("/long", Int64(1000))] {
            server.serve(
                path,
                Resource(
                    .generated(size: size, seed: 2), etag: "e",
                    failures: [.stall(afterBytes: 0, seconds: 0)] + Array(repeating: .misstatedLength(by: delta), count: 20)))
            let error = downloadError(await run(makeJob(path, options: fastOptions(connections: 4, retries: 1))))
            XCTAssertEqual(error?.kind, .unexpectedResponse, "\(path): \(String(describing: error))")
            XCTAssertTrue(error?.message.contains("Content-Length") ?? false, error?.message ?? "")
        }
        // One stream, resuming: the range request gets a misstated length.
        server.serve("/resume", Resource(.generated(size: size, seed: 3), etag: "r", failures: [.dropAfter(bytes: 1 << 20)]))
        _ = downloadError(await run(makeJob("/resume", options: fastOptions(retries: 0))))
        server.serve("/resume", Resource(.generated(size: size, seed: 3), etag: "r", failures: [.misstatedLength(by: 500)]))
        let resumed = downloadError(await run(makeJob("/resume", options: fastOptions(retries: 0))))
        XCTAssertEqual(resumed?.kind, .unexpectedResponse)
        assertNoFinalFile()
        // The .part kept by the failures holds only true bytes: a good server completes it.
        server.serve("/resume", Resource(.generated(size: size, seed: 3), etag: "r"))
        let done = try await run(makeJob("/resume")).get()
        XCTAssertEqual(done.sha256, GeneratedContent.sha256(size: size, seed: 3))
    }

    func testA206ForARangeThatWasNotAskedForFailsClearly() async throws {
        // A fresh download asks for no range and gets a 206.
        server.serve("/unasked", Resource(.generated(size: 100_000, seed: 4), etag: "u", failures: [.unaskedRange(start: 0, end: 999)]))
        let whole = downloadError(await run(makeJob("/unasked", options: fastOptions(retries: 0))))
        XCTAssertEqual(whole?.kind, .unexpectedResponse, "\(String(describing: whole))")
        XCTAssertEqual(whole?.isTransient, false)
        // A part asks for its range and gets another one (a longer one: bytes that belong to the next part).
        let size: Int64 = 4 << 20
        server.serve(
            "/other",
            Resource(
                .generated(size: size, seed: 5), etag: "o",
                failures: [.stall(afterBytes: 0, seconds: 0)] + Array(repeating: .unaskedRange(start: 0, end: size - 1), count: 20)))
        let part = downloadError(await run(makeJob("/other", options: fastOptions(connections: 4, retries: 1))))
        XCTAssertEqual(part?.kind, .unexpectedResponse, "\(String(describing: part))")
        assertNoFinalFile()
    }

    /// Found by a user test: a `Content-Length` that is no length was taken for none, the body was read
    /// to the connection's close, and what arrived was saved under the final name.
    func testAContentLengthThatIsNoLengthFailsClearly() async throws {
        let size: Int64 = 12
        var messages: [String] = []
        for (index, values) in [["99999999999999999999999"], ["abc"], ["10", "12"], ["12", "10"]].enumerated() {
            let path = "/length\(index)"
            server.serve(path, Resource(.generated(size: size, seed: 10), failures: [.announcedLengths(values)]))
            let error = downloadError(await run(makeJob(path, options: fastOptions(retries: 0))))
            // curl refuses some values itself ("Invalid Content-Length"); the engine refuses the others.
            XCTAssertTrue([.unexpectedResponse, .transfer].contains(error?.kind), "\(values): \(String(describing: error))")
            XCTAssertEqual(error?.isTransient, false, "\(values)")
            XCTAssertTrue(error?.message.contains("Content-Length") ?? false, "\(values): \(error?.message ?? "")")
            messages.append(error?.message ?? "")
        }
        XCTAssertTrue(
            messages[0].hasPrefix("the server sent an invalid Content-Length (\"99999999999999999999999\")"), messages[0])
        XCTAssertTrue(messages[2].hasPrefix("the server sent Content-Length fields that disagree (10, 12)"), messages[2])
        assertNoFinalFile()
        // Lengths that agree are one length.
        server.serve("/agreeing", Resource(.generated(size: size, seed: 10), failures: [.announcedLengths(["12", "12"])]))
        let done = try await run(makeJob("/agreeing", options: fastOptions(retries: 0))).get()
        XCTAssertEqual(done.sha256, GeneratedContent.sha256(size: size, seed: 10))
    }

    func testAnInvalidRetryAfterIsIgnoredAndAHugeOneFailsAtOnce() async throws {
        for (index, value) in ["-5", "1e400", "soon", "-99999999999999999999"].enumerated() {
            let path = "/invalid\(index)"
            server.serve(
                path,
                Resource(.generated(size: 1000, seed: 6), failures: Array(repeating: .status(503, retryAfter: .raw(value)), count: 2)))
            let recovered = try await run(makeJob(path)).get()
            XCTAssertEqual(recovered.sha256, GeneratedContent.sha256(size: 1000, seed: 6), "\(value): retried with the usual back-off")
        }
        for (index, value) in ["99999999999999999999999", "31536000"].enumerated() {
            let path = "/huge\(index)"
            server.serve(path, Resource(.generated(size: 1000, seed: 7), failures: [.status(503, retryAfter: .raw(value))]))
            let error = downloadError(await run(makeJob(path)))
            XCTAssertEqual(error?.httpStatus, 503, value)
            XCTAssertTrue(error?.message.contains("Retry-After") ?? false, "\(value): \(error?.message ?? "")")
            XCTAssertEqual(server.requests(to: path).count, 1, "\(value): not retried, and no long wait")
        }
        assertNoFinalFile(except: ["invalid0", "invalid1", "invalid2", "invalid3"])
    }

    func testARedirectToALocationWithControlCharactersFailsClearly() async throws {
        server.serve("/target.bin", Resource(.generated(size: 5000, seed: 8)))
        for (index, location) in ["/target\u{01}.bin", "/tar\tget.bin", "/target.bin\u{7F}", "/t\u{1B}[2Jarget.bin"].enumerated() {
            server.serve("/jump\(index)", .redirect(to: location))
            let error = downloadError(await run(makeJob("/jump\(index)")))
            XCTAssertEqual(error?.isTransient, false, "\(location.debugDescription): \(String(describing: error))")
            XCTAssertTrue(error?.message.contains("Location") ?? false, "\(location.debugDescription): \(error?.message ?? "")")
        }
        XCTAssertEqual(server.requests(to: "/target.bin").count, 0, "no redirect was followed")
        assertNoFinalFile()
    }
}
