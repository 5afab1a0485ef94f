import Foundation
import XCTest
import YXQueue
import YXTestServer

@testable import YXDownload

final class DownloadLimitsTests: DownloadTestCase {
    func testOverallSpeedLimitIsSharedByAllTransfers() async throws {
        let size: Int64 = 1 << 20
        for index in 0..<2 {
            server.serve("/limited/\(index)", Resource(.generated(size: size, seed: UInt64(index))))
        }
        engine.setMaxSpeed(bytesPerSecond: 1 << 20)
        let started = Date()
        let jobs = (0..<2).map { makeJob("/limited/\($0)", file: "limited-\($0)") }
        for job in jobs { dispatcher.add(job) }
        await dispatcher.waitForAllJobs()
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertTrue(jobs.allSatisfy { $0.state == .finishedSuccess })
        // 2 MiB at 1 MiB/s: about 2 s (less a tenth of a second of burst); generous bounds.
        XCTAssertGreaterThan(elapsed, 1.5, "the limit was not applied")
        XCTAssertLessThan(elapsed, 6)
        for index in 0..<2 {
            XCTAssertEqual(
                try sha256(of: directory.appendingPathComponent("limited-\(index)")),
                GeneratedContent.sha256(size: size, seed: UInt64(index)))
        }
    }

    func testTLSIsVerifiedByDefaultAndCanBeTurnedOff() async throws {
        let tls = try HTTPSFixture(directory: directory)
        defer { tls.stop() }
        let body = Data((0..<100_000).map { UInt8($0 % 251) })
        try body.write(to: tls.root.appendingPathComponent("secure.bin"))
        let url = URL(string: "https://127.0.0.1:\(tls.port)/secure.bin")!

        let strict = DownloadJob(url: url, to: directory.appendingPathComponent("strict.bin"), options: fastOptions(), engine: engine)
        let error = downloadError(await run(strict))
        XCTAssertEqual(error?.kind, .tls, "a self-signed certificate is refused by default")
        XCTAssertEqual(error?.isTransient, false)
        XCTAssertFalse(files().contains("strict.bin"))

        var insecure = fastOptions()
        insecure.verifyTLS = false
        let relaxed = DownloadJob(url: url, to: directory.appendingPathComponent("relaxed.bin"), options: insecure, engine: engine)
        let result = try await run(relaxed).get()
        XCTAssertEqual(try Data(contentsOf: result.file), body)
    }

    func testCredentialsInURLsNeverAppearInErrors() async throws {
        server.serve("/private.bin", .status(404))
        var parts = URLComponents(url: server.url("/private.bin"), resolvingAgainstBaseURL: false)!
        parts.user = "alice"
        parts.password = "s3cret"
        let job = DownloadJob(url: parts.url!, to: directory.appendingPathComponent("p.bin"), options: fastOptions(), engine: engine)
        let outcome = await run(job)
        let error = try XCTUnwrap(downloadError(outcome))
        XCTAssertFalse("\(error)".contains("s3cret"))
        XCTAssertFalse(error.url.contains("alice"))
        XCTAssertEqual(server.requests(to: "/private.bin").first?.header("Authorization")?.hasPrefix("Basic "), true)
    }
}

/// A real HTTPS server on 127.0.0.1: Python's http.server behind TLS with a self-signed certificate
/// made by `openssl` for this test.
final class HTTPSFixture {
    let root: URL
    let port: Int
    private let process: Process

    init(directory: URL) throws {
        root = directory.appendingPathComponent("https-root", isDirectory: true)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let key = directory.appendingPathComponent("key.pem").path
        let cert = directory.appendingPathComponent("cert.pem").path
        try Self.runTool(
            "openssl",
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "1",
             "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"])
        let script = """
            import http.server, ssl, sys, functools
            handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
            server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(sys.argv[2], sys.argv[3])
            server.socket = context.wrap_socket(server.socket, server_side=True)
            print(server.server_address[1], flush=True)
            server.serve_forever()
            """
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, root.path, cert, key]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) {
            line.append(byte)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)) else {
            process.terminate()
            throw CocoaError(.fileReadUnknown)
        }
        self.port = port
    }

    /// Kills the server (without waiting for it: a wait on the interpreter can hang under pyenv's shim).
    func stop() {
        kill(process.processIdentifier, SIGKILL)
    }

    /// Waits with `waitpid` instead of `waitUntilExit()`, which spins a run loop and can hang when called
    /// from a task. Returns the exit status (or 0 when Foundation reaped the child first).
    private static func wait(for process: Process) -> Int32 {
        var status: Int32 = 0
        while waitpid(process.processIdentifier, &status, 0) < 0 {
            if errno != EINTR { return 0 }
        }
        return (status >> 8) & 0xFF
    }

    private static func runTool(_ tool: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        guard wait(for: process) == 0 else { throw CocoaError(.executableLoad) }
    }
}
