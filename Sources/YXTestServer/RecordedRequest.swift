import Dispatch

/// One request as the server received it, for assertions.
///
/// Requests are recorded in arrival order when the server starts answering them (after the whole
/// request, body included, has been read), so pipelined requests appear in the order they were sent.
public struct RecordedRequest: Sendable {
    /// The method, e.g. `"GET"` or `"HEAD"`.
    public var method: String

    /// The request target up to (not including) `?`, e.g. `"/files/a.bin"`; not percent-decoded.
    public var path: String

    /// The query string after `?`, without the `?`; `nil` when the target has no `?`.
    public var query: String?

    /// The header fields in the order received, names as the client spelled them.
    public var headers: [(name: String, value: String)]

    /// The HTTP version, e.g. `"HTTP/1.1"`.
    public var version: String

    /// The number of the TCP connection the request arrived on (1 for the server's first connection).
    ///
    /// Two requests with the same number were sent on one kept-alive connection.
    public var connection: Int

    /// When the server read the request, in uptime nanoseconds (`DispatchTime.now().uptimeNanoseconds`):
    /// for assertions on the order and spacing of requests (a `Retry-After` that was honoured, say).
    public var receivedAt: UInt64

    /// Creates a recorded request.
    ///
    /// - Parameters:
    ///   - method: The method.
    ///   - target: The request target; split into ``path`` and ``query`` at the first `?`.
    ///   - headers: The header fields in order.
    ///   - version: The HTTP version.
    ///   - connection: The connection number.
    ///   - receivedAt: When it was read (uptime nanoseconds); now by default.
    public init(
        method: String,
        target: String,
        headers: [(name: String, value: String)],
        version: String = "HTTP/1.1",
        connection: Int = 1,
        receivedAt: UInt64 = DispatchTime.now().uptimeNanoseconds
    ) {
        self.method = method
        if let question = target.firstIndex(of: "?") {
            self.path = String(target[..<question])
            self.query = String(target[target.index(after: question)...])
        } else {
            self.path = target
            self.query = nil
        }
        self.headers = headers
        self.version = version
        self.connection = connection
        self.receivedAt = receivedAt
    }

    /// Returns the value of the first header field called `name`, compared case-insensitively.
    ///
    /// - Parameter name: A field name such as `"range"` or `"If-Range"`.
    /// - Returns: The value, or `nil` when the request has no such field.
    public func header(_ name: String) -> String? {
        self.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}
