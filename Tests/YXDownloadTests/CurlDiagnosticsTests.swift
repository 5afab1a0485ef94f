import Foundation
import InMemoryLogging
import Logging
import XCTest
import YXQueue
import YXTestServer

@testable import YXDownload

/// curl's own account of a transfer (`logsConnectionDetails`): there when asked, never with credentials.
final class CurlDiagnosticsTests: DownloadTestCase {
    func testHeaderValuesThatAreCredentialsAreRedacted() {
        XCTAssertEqual(CurlDiagnostics.redactedHeader("Authorization: Basic YWxpY2U6czNjcmV0"), "Authorization: [redacted]")
        XCTAssertEqual(CurlDiagnostics.redactedHeader("cookie: a=1; b=2"), "cookie: [redacted]")
        XCTAssertEqual(CurlDiagnostics.redactedHeader("Set-Cookie: id=9"), "Set-Cookie: [redacted]")
        XCTAssertEqual(CurlDiagnostics.redactedHeader("X-Api-Key: k"), "X-Api-Key: [redacted]")
        XCTAssertEqual(CurlDiagnostics.redactedHeader("X-Auth-Token: t"), "X-Auth-Token: [redacted]")
        XCTAssertEqual(CurlDiagnostics.redactedHeader("Content-Length: 10"), "Content-Length: 10")
        // Not secrets, though "auth" is in their names: a server's challenge, and HTTP/2's host and port.
        XCTAssertEqual(
            CurlDiagnostics.redactedHeader("WWW-Authenticate: Basic realm=\"files\""), "WWW-Authenticate: Basic realm=\"files\"")
        XCTAssertEqual(CurlDiagnostics.redactedHeader("Proxy-Authenticate: Basic"), "Proxy-Authenticate: Basic")
        XCTAssertEqual(
            CurlDiagnostics.redactedNote("[HTTP/2] [1] [:authority: 127.0.0.1:8443]"), "[HTTP/2] [1] [:authority: 127.0.0.1:8443]")
        XCTAssertEqual(
            CurlDiagnostics.redactedNote("[HTTP/2] [1] [:authority: 127.0.0.1:8443] [x-auth-token: t]"),
            "[HTTP/2] [1] [:authority: 127.0.0.1:8443] [x-auth-token: [redacted]]")
        XCTAssertEqual(CurlDiagnostics.redactedHeader("GET /a.bin HTTP/1.1"), "GET /a.bin HTTP/1.1")
        XCTAssertEqual(
            CurlDiagnostics.redactedNote("Server auth using Basic with user 'alice'"),
            "Server auth using Basic with user '[redacted]'")
        XCTAssertEqual(
            CurlDiagnostics.redactedNote("[HTTP/2] [1] [authorization: Basic YWxpY2U6czNjcmV0]"),
            "[HTTP/2] [1] [authorization: [redacted]]")
        XCTAssertEqual(
            CurlDiagnostics.redactedNote("Connected to 127.0.0.1 (127.0.0.1) port 8080 (#0)"),
            "Connected to 127.0.0.1 (127.0.0.1) port 8080 (#0)")
    }

    func testConnectionDetailsAreLoggedAtTraceWithoutCredentials() async throws {
        server.serve("/a.bin", Resource(.generated(size: 5_000, seed: 1)))
        server.serve("/b.bin", Resource(.generated(size: 5_000, seed: 2)))
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "test", factory: { _ in handler })
        logger.logLevel = .trace
        var configuration = Downloader.Configuration(lanes: 1)
        configuration.logsConnectionDetails = true
        configuration.defaultOptions.headers = ["Cookie: session=s3cret-cookie", "X-Api-Key: s3cret-key"]
        let downloader = Downloader(configuration: configuration, logger: logger)
        defer { downloader.shutdown() }
        var parts = URLComponents(url: server.url("/a.bin"), resolvingAgainstBaseURL: false)!
        parts.user = "alice"
        parts.password = "s3cret-password"
        _ = try await downloader.download(try XCTUnwrap(parts.url), to: directory.appendingPathComponent("a.bin"))
        _ = try await downloader.download(server.url("/b.bin"), to: directory.appendingPathComponent("b.bin"))

        let curl = handler.entries.filter { $0.message.description.hasPrefix("curl ") }
        let text = curl.map(\.message.description).joined(separator: "\n")
        XCTAssertTrue(curl.allSatisfy { $0.level == .trace })
        XCTAssertTrue(text.contains("curl > GET /a.bin HTTP/1.1"), text)
        XCTAssertTrue(text.contains("curl < HTTP/1.1 200 OK"), text)
        XCTAssertTrue(text.contains("curl * Connected to 127.0.0.1"), text)
        XCTAssertTrue(text.lowercased().contains("re-using existing connection"), "the second file reused the connection:\n\(text)")
        XCTAssertTrue(text.contains("Authorization: [redacted]"), text)
        XCTAssertTrue(text.contains("Cookie: [redacted]"), text)
        let everything = handler.entries.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        for secret in ["s3cret", "YWxpY2U6", "alice"] {
            XCTAssertFalse(everything.contains(secret), "\(secret) in:\n\(everything)")
        }
    }
}
