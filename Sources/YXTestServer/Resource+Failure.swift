extension Resource {
    /// A misbehaviour applied to one request, taken from ``Resource/failures`` before normal service.
    ///
    /// Body failures act on the response the request would otherwise get (a `206` for a range
    /// request, a `200` otherwise), with its headers and its announced `Content-Length` unchanged;
    /// when they close the connection, the head does not announce it (no `Connection: close`), as
    /// when a real server dies mid-transfer.
    /// On a `HEAD` request there is no body: ``dropAfter(bytes:)`` and ``shortBody(missing:)`` then
    /// close the connection right after the headers, and ``stall(afterBytes:seconds:)`` does nothing.
    public enum Failure: Sendable, Equatable {
        /// Answers with `code` and a small `text/plain` body instead of the resource, with
        /// `Retry-After` when given. The connection stays open.
        case status(Int, retryAfter: RetryAfter? = nil)

        /// Sends the normal headers (full `Content-Length`), then `bytes` bytes of the body (or the
        /// whole body if it is shorter), then closes the connection.
        case dropAfter(bytes: Int64)

        /// Sends the normal headers (full `Content-Length`), then all but the last `missing` bytes
        /// of the body, then closes the connection.
        case shortBody(missing: Int64)

        /// Sends the normal headers and `afterBytes` bytes of the body, then nothing for `seconds`,
        /// then **continues** and completes the response normally.
        ///
        /// A client with a low-speed timeout shorter than `seconds` gives up during the pause; a
        /// patient client gets the whole body. The pause is a task scheduled on the event loop, and
        /// ``TestHTTPServer/stop()`` cancels it. A client that goes away during the pause is noticed
        /// when the pause ends and the next write fails: the server supports half-closed
        /// connections, so a client's FIN alone does not end a response. `seconds` is clamped to
        /// 0...1_000_000, so `.infinity` means "until `stop()`".
        case stall(afterBytes: Int64, seconds: Double)

        /// Closes the connection as soon as the request has been read, without sending a byte.
        case disconnect

        /// Answers as usual, but announces a `Content-Length` that is `delta` bytes off the body it
        /// describes, and frames the body by that false length: a `206` keeps its true `Content-Range`.
        ///
        /// With a negative `delta` the body is cut short (the response is complete as announced, the
        /// connection stays open); with a positive one, the bytes that follow the range in the content
        /// are sent too (for ``BodySource/generated(size:seed:)`` even past its end). A broken proxy or
        /// server does this; a client must not take the body for the range it was announced as.
        case misstatedLength(by: Int64)

        /// Answers `206 Partial Content` with `Content-Range: bytes START-END/SIZE` and those bytes of the
        /// content, whatever the request asked for (another range, or none). `end` is clamped to the
        /// content's last byte.
        case unaskedRange(start: Int64, end: Int64)

        /// Answers as usual, but with one `Content-Length` field per text of `values` in place of the true
        /// one (texts: they need not be numbers, nor agree), sends the whole body, then closes the
        /// connection: the close is all that ends the body. A broken server does this; a client must not
        /// take what arrived for the file.
        case announcedLengths([String])

        /// Answers as if the request asked for no range: `200 OK` with the whole content (and
        /// `Accept-Ranges: bytes` still). A server that honours ranges for some requests only does this.
        case ignoredRange
    }
}
