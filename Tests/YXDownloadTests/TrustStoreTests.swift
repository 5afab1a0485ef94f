import Foundation
import XCTest
@_spi(YXQueueInternals) import YXQueue
import YXTestServer

@testable import YXDownload

/// A verified connection trusts the CA directory alone first, and the whole setting (file and directory)
/// when that finds no trusted issuer. Against a real HTTPS server with its own certificate, placed in a
/// CA file, a hashed CA directory, both or neither.
final class TrustStoreTests: DownloadTestCase {
    private final class Handler: TransferHandler, @unchecked Sendable {
        let received = Locked(0)
        let outcome = Locked<TransferOutcome?>(nil)

        func transferDidReceiveResponse(_ response: TransferResponse) -> ResponseVerdict { .proceed }
        func transferDidReceive(_ bytes: UnsafeRawBufferPointer) -> DownloadError? {
            received.withLock { $0 += bytes.count }
            return nil
        }
        func transferDidComplete(_ outcome: TransferOutcome) {
            self.outcome.withLock { $0 = outcome }
        }
    }

    private var tls: HTTPSFixture!
    private let body = Data((0..<50_000).map { UInt8($0 % 253) })

    override func setUp() async throws {
        try await super.setUp()
        tls = try HTTPSFixture(directory: directory)
        try body.write(to: tls.root.appendingPathComponent("t.bin"))
    }

    override func tearDown() async throws {
        tls.stop()
        try await super.tearDown()
    }

    /// The server's certificate.
    private var certificate: URL { directory.appendingPathComponent("cert.pem") }

    /// A CA directory as OpenSSL reads it: each certificate under the hash of its subject.
    private func caDirectory(named name: String, holding certificates: [URL]) throws -> String {
        let folder = directory.appendingPathComponent(name, isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for certificate in certificates {
            let hash = try run("openssl", ["x509", "-subject_hash", "-noout", "-in", certificate.path])
            try FileManager.default.copyItem(at: certificate, to: folder.appendingPathComponent("\(hash).0"))
        }
        return folder.path
    }

    /// A certificate the server does not use.
    private func otherCertificate() throws -> URL {
        let cert = directory.appendingPathComponent("other-cert.pem")
        _ = try run(
            "openssl",
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", directory.appendingPathComponent("other-key.pem").path,
             "-out", cert.path, "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"])
        return cert
    }

    private func run(_ tool: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        // waitpid, not waitUntilExit(), which spins a run loop and can hang in an async test.
        var status: Int32 = 0
        while waitpid(process.processIdentifier, &status, 0) < 0 && errno == EINTR {}
        XCTAssertEqual((status >> 8) & 0xFF, 0, "\(tool) \(arguments.joined(separator: " "))")
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func fetch(trusting trust: TrustStore, host: String = "127.0.0.1") async throws -> TransferOutcome {
        var request = TransferRequest(
            url: URL(string: "https://\(host):\(tls.port)/t.bin")!, userAgent: "test", connectTimeout: 10,
            stallTimeout: 20, verifyTLS: true)
        request.trust = trust
        let handler = Handler()
        engine.submit(Transfer(request: request, handler: handler))
        try await waitUntil("the transfer's end") { handler.outcome.withLock { $0 != nil } }
        if case .success = handler.outcome.withLock({ $0 })! {
            XCTAssertEqual(handler.received.withLock { $0 }, body.count)
        }
        return handler.outcome.withLock { $0 }!
    }

    func testACertificateInTheDirectoryIsTrustedOnTheFirstConnectionWithoutReadingTheFile() async throws {
        // A file that does not exist: libcurl fails a connection whose CA file it cannot read.
        let trust = TrustStore(
            file: directory.appendingPathComponent("missing.pem").path,
            directory: try caDirectory(named: "ca", holding: [certificate]), directoryFirst: true)
        guard case .success = try await fetch(trusting: trust) else { return XCTFail("expected a success") }
        XCTAssertEqual(engine.connectionsOpened, 1, "the directory alone was enough")
    }

    func testACertificateOnlyInTheFileIsTrustedOnASecondConnection() async throws {
        let trust = TrustStore(
            file: certificate.path, directory: try caDirectory(named: "empty", holding: []), directoryFirst: true)
        guard case .success = try await fetch(trusting: trust) else { return XCTFail("expected a success") }
        XCTAssertEqual(engine.connectionsOpened, 2, "the directory alone failed, the whole setting verified")
        // The server closes each connection (HTTP/1.0): the next transfer to it opens one, with the whole
        // setting at once (the engine remembers the origin), not a failed one first.
        guard case .success = try await fetch(trusting: trust) else { return XCTFail("expected a success") }
        XCTAssertEqual(engine.connectionsOpened, 3)
    }

    func testACertificateInNeitherIsRefusedAfterBothTries() async throws {
        let trust = TrustStore(
            file: try otherCertificate().path, directory: try caDirectory(named: "empty", holding: []),
            directoryFirst: true)
        guard case .failure(let error) = try await fetch(trusting: trust) else { return XCTFail("expected a failure") }
        XCTAssertEqual(error.kind, .tls)
        XCTAssertFalse(error.isTransient)
        XCTAssertEqual(engine.connectionsOpened, 2, "tried once more with the whole setting, and no more")
    }

    func testAWrongHostNameIsNotTriedAgain() async throws {
        // The certificate names 127.0.0.1 only; the directory trusts it. No other trust setting can make
        // the name right: one connection, and the error says what is wrong.
        let trust = TrustStore(
            file: certificate.path, directory: try caDirectory(named: "ca", holding: [certificate]), directoryFirst: true)
        guard case .failure(let error) = try await fetch(trusting: trust, host: "localhost") else {
            return XCTFail("expected a failure")
        }
        XCTAssertEqual(error.kind, .tls)
        XCTAssertEqual(engine.connectionsOpened, 1)
    }

    func testWithoutDirectoryFirstTheWholeSettingIsUsedAtOnce() async throws {
        let trust = TrustStore(
            file: certificate.path, directory: try caDirectory(named: "empty", holding: []), directoryFirst: false)
        guard case .success = try await fetch(trusting: trust) else { return XCTFail("expected a success") }
        XCTAssertEqual(engine.connectionsOpened, 1)
    }
}

/// When the CA directory goes first: which libcurl builds and which CA files.
final class TrustStoreRuleTests: XCTestCase {
    func testTheDirectoryGoesFirstOnlyWithTheOpenSSLFamilyBothPathsAndAFileInTheDirectoryWithoutTrustSettings()
        throws
    {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("trust-rule-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let plain = folder.appendingPathComponent("bundle.crt")
        try Data("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".utf8).write(to: plain)
        let marked = folder.appendingPathComponent("marked.crt")
        try Data("-----BEGIN TRUSTED CERTIFICATE-----\nMIIB\n-----END TRUSTED CERTIFICATE-----\n".utf8).write(to: marked)
        let outside = FileManager.default.temporaryDirectory.appendingPathComponent("trust-rule-\(UUID().uuidString).crt")
        try Data(contentsOf: plain).write(to: outside)
        defer { try? FileManager.default.removeItem(at: outside) }
        let dir = folder.path

        XCTAssertTrue(TrustStore.appliesTo(tlsLibrary: "OpenSSL/3.0.19", caFile: plain.path, caDirectory: dir))
        XCTAssertTrue(TrustStore.appliesTo(tlsLibrary: "OpenSSL/3.0.19", caFile: plain.path, caDirectory: dir + "/"))
        XCTAssertTrue(TrustStore.appliesTo(tlsLibrary: "LibreSSL/3.8.2", caFile: plain.path, caDirectory: dir))
        XCTAssertFalse(TrustStore.appliesTo(tlsLibrary: "GnuTLS/3.7.9", caFile: plain.path, caDirectory: dir))
        XCTAssertFalse(
            TrustStore.appliesTo(tlsLibrary: "(OpenSSL/3.0.19) GnuTLS/3.7.9", caFile: plain.path, caDirectory: dir),
            "a multi-TLS build whose active library is GnuTLS")
        XCTAssertFalse(TrustStore.appliesTo(tlsLibrary: nil, caFile: plain.path, caDirectory: dir))
        XCTAssertFalse(TrustStore.appliesTo(tlsLibrary: "OpenSSL/3.0.19", caFile: nil, caDirectory: dir))
        XCTAssertFalse(TrustStore.appliesTo(tlsLibrary: "OpenSSL/3.0.19", caFile: plain.path, caDirectory: nil))
        XCTAssertFalse(TrustStore.appliesTo(tlsLibrary: "OpenSSL/3.0.19", caFile: plain.path, caDirectory: ""))
        XCTAssertFalse(
            TrustStore.appliesTo(tlsLibrary: "OpenSSL/3.0.19", caFile: outside.path, caDirectory: dir),
            "a file outside the directory: nothing says one tool keeps them together")
        XCTAssertFalse(
            TrustStore.appliesTo(tlsLibrary: "OpenSSL/3.0.19", caFile: marked.path, caDirectory: dir),
            "trust settings in the file, which the directory does not carry")
        XCTAssertFalse(
            TrustStore.appliesTo(
                tlsLibrary: "OpenSSL/3.0.19", caFile: folder.appendingPathComponent("missing.crt").path, caDirectory: dir))
        XCTAssertFalse(
            TrustStore.appliesTo(tlsLibrary: "OpenSSL/3.0.19", caFile: plain.path, caDirectory: plain.path),
            "a file is not a directory")
    }
}
