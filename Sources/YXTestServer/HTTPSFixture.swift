import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A real HTTPS server on 127.0.0.1: Python's http.server behind TLS with a self-signed certificate
/// made by `openssl` for this fixture. Needs `openssl` and `python3` on the PATH.
///
/// ```swift
/// let https = try HTTPSFixture(directory: temporaryFolder)
/// try data.write(to: https.root.appendingPathComponent("a.bin"))
/// // https://127.0.0.1:\(https.port)/a.bin, self-signed: trust nothing or turn verification off
/// https.stop()
/// ```
public final class HTTPSFixture: @unchecked Sendable {
    /// The folder whose files are served.
    public let root: URL
    /// The port on 127.0.0.1.
    public let port: Int
    private let process: Process

    /// Makes a certificate in `directory`, starts the server, and returns once it listens.
    public init(directory: URL) throws {
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
    public func stop() {
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
