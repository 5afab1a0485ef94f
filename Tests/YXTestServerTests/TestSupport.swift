import Crypto
import Foundation
import XCTest
import YXTestServer

/// Starts a server, runs `body` with it, and stops it whatever happens.
func withServer(_ body: (TestHTTPServer) async throws -> Void) async throws {
    let server = try await TestHTTPServer.start()
    do {
        try await body(server)
    } catch {
        try await server.stop()
        throw error
    }
    try await server.stop()
}

/// The SHA-256 of `data` as lowercase hex.
func sha256Hex(_ data: Data) -> String {
    SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
}

/// A SHA-256 fed piece by piece, giving lowercase hex.
struct IncrementalSHA256 {
    private var hasher = SHA256()

    mutating func update(_ data: Data) {
        self.hasher.update(data: data)
    }

    func finalize() -> String {
        self.hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
