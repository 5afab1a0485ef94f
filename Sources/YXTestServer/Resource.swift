import Foundation

/// What a route of a ``TestHTTPServer`` answers: a body, or a fixed status, or a redirect, plus behaviours.
///
/// A resource is a value: ``TestHTTPServer/serve(_:_:)`` copies it into the server, and serving a
/// new value for the same path replaces the route (and restarts its failure queue and version
/// counter). All behaviours are optional and combine freely:
///
/// - **Ranges** (on unless ``ignoresRange``): `Range: bytes=a-b`, `bytes=a-`, `bytes=-n` give
///   `206 Partial Content` with `Content-Range: bytes a-b/SIZE`; a range that starts at or beyond
///   the end (or `bytes=-0`, or any range of an empty body) gives `416` with
///   `Content-Range: bytes */SIZE` and an empty body. A syntactically invalid range, a range with
///   `first > last`, a multi-range (`bytes=0-1,5-6`) or another unit is ignored and the full body
///   is sent with `200`, as RFC 9110 allows. Responses carry `Accept-Ranges: bytes` unless
///   ``ignoresRange`` is set.
/// - **Validators**: a version's ``Version/etag`` is sent as `ETag` (quoted if you did not quote
///   it) and ``Version/lastModified`` as `Last-Modified` (an HTTP-date). `If-Range` is honoured:
///   when it is a strong entity-tag equal to the current `ETag`, or a date string identical to the
///   current `Last-Modified`, the range is served; otherwise (including weak tags and resources
///   without validators) the full body is sent with `200`.
/// - **Versions**: the *n*-th request to the route since it was served (counting from 0, failures
///   and `HEAD` included) gets `versions[min(n, versions.count - 1)]`, so content can change
///   between requests deterministically. Swapping the route with ``TestHTTPServer/serve(_:_:)``
///   mid-test is the other way.
/// - **Failures**: ``failures`` are consumed one per request, in order, before normal service.
/// - **Framing and pace**: ``chunked`` and ``bytesPerSecond`` apply to every response body of the
///   route (content, status pages, redirects, failure pages).
///
/// Every response carries `Content-Length`, except chunked ones. `HEAD` gets the same status and
/// headers as `GET` would, without a body.
///
/// ```swift
/// var resource = Resource(.generated(size: 64 << 20, seed: 1), etag: "v1")
/// resource.failures = [.status(503, retryAfter: .seconds(1)), .dropAfter(bytes: 1 << 20)]
/// server.serve("/files/a.bin", resource)
/// server.serve("/old", .redirect(to: "/files/a.bin", status: 301))
/// server.serve("/gone", .status(410))
/// ```
public struct Resource: Sendable {
    /// What the route answers when no failure applies.
    public var kind: Kind

    /// When `true`, `Range` and `If-Range` are ignored: every request gets `200` with the full
    /// body, and no `Accept-Ranges` header is sent.
    public var ignoresRange: Bool

    /// When `true`, `Range` is honoured but `If-Range` is not: a resume gets the rest of the current
    /// version even when the validator it sent is another one's (a server that breaks RFC 9110 this way
    /// glues two versions together for a client that does not check). Default `false`.
    public var ignoresIfRange = false

    /// When `true`, bodies are sent with `Transfer-Encoding: chunked` and no `Content-Length`.
    ///
    /// Data is framed in chunks of at most 64 KiB. A body cut short by a failure ends without the
    /// terminating zero-length chunk.
    public var chunked: Bool

    /// When set, every body of the route is sent at about this many bytes per second.
    ///
    /// The body is cut into pieces of `bytesPerSecond / 20` bytes (at least 1, at most 64 KiB) and
    /// each piece is written when the average rate since the start of the body (or since the end
    /// of a stall) allows it, with tasks scheduled on the connection's event loop: no thread
    /// sleeps and the event loop is never blocked. `nil`, zero or a negative value mean no limit.
    public var bytesPerSecond: Int?

    /// Misbehaviours consumed one per request, in order, before normal service resumes.
    ///
    /// Every request to the route (`GET`, `HEAD` or anything else) takes the next failure, if any.
    public var failures: [Failure]

    /// The `Content-Type` of content bodies (status pages and redirects are `text/plain`).
    public var contentType: String

    /// Extra header fields added to every response of the route, after the server's own.
    public var headers: [(name: String, value: String)]

    /// Creates a resource that serves `body` with optional validators and behaviours.
    ///
    /// - Parameters:
    ///   - body: The content.
    ///   - etag: Sent as `ETag`; quoted for you unless it already starts with `"` or `W/"`.
    ///   - lastModified: Sent as `Last-Modified`, as an HTTP-date (whole seconds).
    ///   - ignoresRange: See ``ignoresRange``.
    ///   - chunked: See ``chunked``.
    ///   - bytesPerSecond: See ``bytesPerSecond``.
    ///   - failures: See ``failures``.
    ///   - contentType: See ``contentType``.
    ///   - headers: See ``headers``.
    public init(
        _ body: BodySource,
        etag: String? = nil,
        lastModified: Date? = nil,
        ignoresRange: Bool = false,
        chunked: Bool = false,
        bytesPerSecond: Int? = nil,
        failures: [Failure] = [],
        contentType: String = "application/octet-stream",
        headers: [(name: String, value: String)] = []
    ) {
        self.init(
            kind: .content([Version(body, etag: etag, lastModified: lastModified)]),
            ignoresRange: ignoresRange,
            chunked: chunked,
            bytesPerSecond: bytesPerSecond,
            failures: failures,
            contentType: contentType,
            headers: headers
        )
    }

    /// Creates a resource that answers with any ``Kind`` and behaviours.
    ///
    /// - Parameters:
    ///   - kind: What the route answers when no failure applies.
    ///   - ignoresRange: See ``ignoresRange``.
    ///   - chunked: See ``chunked``.
    ///   - bytesPerSecond: See ``bytesPerSecond``.
    ///   - failures: See ``failures``.
    ///   - contentType: See ``contentType``.
    ///   - headers: See ``headers``.
    public init(
        kind: Kind,
        ignoresRange: Bool = false,
        chunked: Bool = false,
        bytesPerSecond: Int? = nil,
        failures: [Failure] = [],
        contentType: String = "application/octet-stream",
        headers: [(name: String, value: String)] = []
    ) {
        self.kind = kind
        self.ignoresRange = ignoresRange
        self.chunked = chunked
        self.bytesPerSecond = bytesPerSecond
        self.failures = failures
        self.contentType = contentType
        self.headers = headers
    }

    /// A resource whose content changes from one request to the next.
    ///
    /// The *n*-th request to the route (from 0, failures and `HEAD` included) is answered from
    /// `versions[min(n, versions.count - 1)]`.
    ///
    /// - Parameter versions: At least one version.
    /// - Returns: A content resource with default behaviours; set its properties to add more.
    public static func versions(_ versions: [Version]) -> Resource {
        precondition(!versions.isEmpty, "a resource needs at least one version")
        return Resource(kind: .content(versions))
    }

    /// A resource that answers every request with `code`, a `text/plain` body such as
    /// `"410 Gone\n"`, and optionally `Retry-After`.
    ///
    /// - Parameters:
    ///   - code: Any status from 200 to 599 (404, 403, 410, 500, 503…).
    ///   - retryAfter: Sent as `Retry-After` when not `nil`.
    /// - Returns: A status resource with default behaviours.
    public static func status(_ code: Int, retryAfter: RetryAfter? = nil) -> Resource {
        Resource(kind: .status(code, retryAfter: retryAfter))
    }

    /// A resource that redirects every request.
    ///
    /// - Parameters:
    ///   - location: Sent as `Location`. A path (starting with a single `/`) is made absolute with
    ///     the server's own origin (`http://127.0.0.1:PORT/...`); anything else (`file:///etc/passwd`,
    ///     another `http://` URL, `//host/x`) is sent exactly as given. Chains and loops are routes that
    ///     redirect to each other.
    ///   - status: 301, 302, 303, 307 or 308.
    /// - Returns: A redirect resource with default behaviours.
    public static func redirect(to location: String, status: Int = 302) -> Resource {
        Resource(kind: .redirect(to: location, status: status))
    }
}
