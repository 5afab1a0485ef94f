import NIOCore

/// Everything a connection needs to send one response, decided before the first byte goes out.
///
/// Built by ``ResponsePlan/make(for:admission:origin:)`` from the request and what the locked state
/// handed out; executed by ``HTTPConnectionHandler``.
struct ResponsePlan {
    /// How the body is to be sent.
    struct Body {
        /// Where the bytes come from.
        var source: BodySource

        /// The offsets of `source` to send, in order.
        var range: Range<Int64>

        /// Whether to frame the body with `Transfer-Encoding: chunked`.
        var chunked: Bool

        /// The pace, or `nil` for as fast as the client reads.
        var bytesPerSecond: Int?

        /// A misbehaviour in the middle of the body.
        var interruption: Interruption?
    }

    /// A misbehaviour in the middle of a body.
    enum Interruption: Equatable {
        /// Close the connection once this many body bytes have been sent.
        case close(afterBytes: Int64)

        /// Send nothing for this long once this many body bytes have been sent, then go on.
        case stall(afterBytes: Int64, pause: TimeAmount)

        /// The body offset (bytes sent) at which the interruption happens.
        var afterBytes: Int64 {
            switch self {
            case .close(let bytes), .stall(let bytes, _):
                return bytes
            }
        }
    }

    /// The status code.
    var status: Int

    /// Header fields in order (the server's own, then the resource's extra ones).
    var headers: [(name: String, value: String)]

    /// The body, or `nil` when nothing follows the headers (`HEAD`, `416`).
    var body: Body?

    /// Whether to close the connection once the response has been sent.
    var closesConnection: Bool

    /// Whether to close the connection at once without sending anything.
    var disconnectsImmediately = false

    /// The head of the response as bytes: status line, fields, blank line.
    func headBytes(allocator: ByteBufferAllocator) -> ByteBuffer {
        var buffer = allocator.buffer(capacity: 256)
        let reason = Self.reasonPhrase(self.status)
        buffer.writeString("HTTP/1.1 \(self.status) \(reason)\r\n")
        for (name, value) in self.headers {
            buffer.writeString("\(name): \(value)\r\n")
        }
        buffer.writeString("\r\n")
        return buffer
    }

    /// The standard reason phrase for `status`, or a generic one.
    static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 410: return "Gone"
        case 416: return "Range Not Satisfiable"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default:
            switch status / 100 {
            case 1: return "Informational"
            case 2: return "Success"
            case 3: return "Redirection"
            case 4: return "Client Error"
            default: return "Server Error"
            }
        }
    }
}
