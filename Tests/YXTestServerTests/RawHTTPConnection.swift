import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

#if canImport(Glibc)
private let systemSend = Glibc.send
#else
private let systemSend = Darwin.send
#endif

/// A response as read off the wire by ``RawHTTPConnection``.
struct RawResponse {
    /// The status code.
    var status: Int

    /// The header fields in order.
    var headers: [(name: String, value: String)]

    /// The body bytes received (chunked bodies are de-framed).
    var body: Data

    /// Whether the connection ended before the announced body was complete.
    var endedEarly: Bool

    /// The sizes of the chunks of a chunked body, in order (without the final zero-length chunk).
    var chunkSizes: [Int] = []

    /// The value of the first header field called `name`, compared case-insensitively.
    func header(_ name: String) -> String? {
        self.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}

/// Errors of ``RawHTTPConnection``.
enum RawHTTPError: Error {
    case system(String, Int32)
    case timedOut
    case closedBeforeHead
    case malformed(String)
}

/// A tiny blocking HTTP/1.1 client over one POSIX TCP socket to 127.0.0.1, for tests.
///
/// It sends exactly what the test writes and parses exactly what comes back, so tests see the
/// server's bytes without any client library in between. Every read has a receive timeout
/// (`SO_RCVTIMEO`) as a safety net, never as synchronisation.
///
/// - Note: Not thread-safe; use one connection from one test at a time.
final class RawHTTPConnection {
    private let socketDescriptor: Int32
    private var buffer = Data()
    private var isAtEOF = false

    /// Connects to `127.0.0.1:port`.
    ///
    /// - Parameters:
    ///   - port: The server's port.
    ///   - timeout: The receive timeout of every read, in seconds.
    init(port: Int, timeout: Int = 10) throws {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw RawHTTPError.system("socket", errno) }
        self.socketDescriptor = descriptor

        var time = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))

        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let error = errno
            close(descriptor)
            throw RawHTTPError.system("connect", error)
        }
    }

    deinit {
        close(self.socketDescriptor)
    }

    /// Sends `text` as it is.
    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let result = bytes[sent...].withUnsafeBytes { systemSend(self.socketDescriptor, $0.baseAddress, $0.count, 0) }
            guard result > 0 else { throw RawHTTPError.system("send", errno) }
            sent += result
        }
    }

    /// Sends a request for `path` with `method` and extra header fields.
    func sendRequest(_ method: String, _ path: String, headers: [String: String] = [:]) throws {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            text += "\(name): \(value)\r\n"
        }
        try self.send(text + "\r\n")
    }

    /// Shuts down the sending side of the socket (the server reads end-of-file).
    func shutdownWrite() {
        #if canImport(Glibc)
        shutdown(self.socketDescriptor, Int32(SHUT_WR))
        #else
        shutdown(self.socketDescriptor, SHUT_WR)
        #endif
    }

    /// Sends a `GET` request and reads its response.
    func request(_ path: String, headers: [String: String] = [:]) throws -> RawResponse {
        try self.request("GET", path, headers: headers)
    }

    /// Sends a request and reads its response.
    func request(_ method: String, _ path: String, headers: [String: String] = [:]) throws -> RawResponse {
        try self.sendRequest(method, path, headers: headers)
        return try self.readResponse(method: method)
    }

    /// Reads the status line and header fields of the next response.
    func readHead() throws -> (status: Int, headers: [(name: String, value: String)]) {
        let separator = Data("\r\n\r\n".utf8)
        while self.buffer.range(of: separator) == nil {
            guard try self.fill() else { throw RawHTTPError.closedBeforeHead }
        }
        let end = self.buffer.range(of: separator)!
        let headText = String(decoding: self.buffer[self.buffer.startIndex..<end.lowerBound], as: UTF8.self)
        self.buffer = Data(self.buffer[end.upperBound...])
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]) else {
            throw RawHTTPError.malformed(headText)
        }
        let headers = try lines.map { line -> (name: String, value: String) in
            guard let colon = line.firstIndex(of: ":") else { throw RawHTTPError.malformed(line) }
            return (
                name: String(line[..<colon]),
                value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            )
        }
        return (status, headers)
    }

    /// Reads one whole response: head, then a body framed by `Content-Length`, chunked encoding,
    /// or the end of the connection.
    ///
    /// - Parameter method: The request's method; `HEAD` responses have no body.
    func readResponse(method: String = "GET") throws -> RawResponse {
        let (status, headers) = try self.readHead()
        var response = RawResponse(status: status, headers: headers, body: Data(), endedEarly: false)
        if method == "HEAD" || status == 204 || status == 304 {
            return response
        }
        if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            try self.readChunkedBody(into: &response)
        } else if let lengthText = response.header("Content-Length") {
            guard let length = Int(lengthText) else { throw RawHTTPError.malformed(lengthText) }
            response.body = try self.read(count: length)
            response.endedEarly = response.body.count < length
        } else {
            response.body = try self.readUntilClosed()
        }
        return response
    }

    /// Reads up to `count` bytes; fewer only if the connection ends first.
    func read(count: Int) throws -> Data {
        while self.buffer.count < count {
            guard try self.fill() else { break }
        }
        let taken = min(count, self.buffer.count)
        let result = Data(self.buffer.prefix(taken))
        self.buffer = Data(self.buffer.dropFirst(taken))
        return result
    }

    /// Reads everything until the server closes the connection.
    func readUntilClosed() throws -> Data {
        while try self.fill() {}
        let result = self.buffer
        self.buffer = Data()
        return result
    }

    /// Waits for the server to close the connection; returns whether it did so without sending more.
    func waitForClose() throws -> Bool {
        try self.readUntilClosed().isEmpty
    }

    private func readChunkedBody(into response: inout RawResponse) throws {
        while true {
            guard let line = try self.readLine() else {
                response.endedEarly = true
                return
            }
            let sizeText = line.split(separator: ";").first.map(String.init) ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else {
                throw RawHTTPError.malformed(line)
            }
            if size == 0 {
                // Trailer section: lines until an empty one.
                while let trailer = try self.readLine(), !trailer.isEmpty {}
                return
            }
            let data = try self.read(count: size)
            response.body.append(data)
            response.chunkSizes.append(size)
            guard data.count == size, try self.readLine() == "" else {
                response.endedEarly = true
                return
            }
        }
    }

    /// Reads one CRLF-terminated line, or `nil` if the connection ends first.
    private func readLine() throws -> String? {
        let crlf = Data("\r\n".utf8)
        while self.buffer.range(of: crlf) == nil {
            guard try self.fill() else { return nil }
        }
        let end = self.buffer.range(of: crlf)!
        let line = String(decoding: self.buffer[self.buffer.startIndex..<end.lowerBound], as: UTF8.self)
        self.buffer = Data(self.buffer[end.upperBound...])
        return line
    }

    /// Receives more bytes into the buffer; returns `false` at the end of the connection.
    private func fill() throws -> Bool {
        if self.isAtEOF { return false }
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        let count = chunk.withUnsafeMutableBytes { recv(self.socketDescriptor, $0.baseAddress, $0.count, 0) }
        if count > 0 {
            self.buffer.append(contentsOf: chunk[0..<count])
            return true
        }
        if count == 0 {
            self.isAtEOF = true
            return false
        }
        let error = errno
        if error == EAGAIN || error == EWOULDBLOCK {
            throw RawHTTPError.timedOut
        }
        if error == ECONNRESET {
            self.isAtEOF = true
            return false
        }
        throw RawHTTPError.system("recv", error)
    }
}
