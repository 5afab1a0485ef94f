import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix

/// A real HTTP/1.1 server on the loopback interface, for tests, benchmarks and demos of HTTP clients.
///
/// Start one per test on port 0, give it routes with ``serve(_:_:)``, point the client at
/// ``url(_:)``, assert on ``requests(to:)``, ``requestCount`` and ``connectionCount``, and
/// ``stop()`` it. Each route is a ``Resource``: literal or generated content of any size, with
/// range support, validators, versions, scripted failures (statuses with `Retry-After`, dropped
/// connections, short bodies, stalls), fixed statuses, redirects, chunked framing and throttling.
///
/// Connections are HTTP/1.1 keep-alive: they stay open between requests unless the request asks
/// for `Connection: close` (or is HTTP/1.0 without keep-alive) or a failure closes them. Requests
/// on one connection are answered in order, pipelined ones included; a client that shuts down its
/// sending side still gets its answers before the server closes.
///
/// ```swift
/// let server = try await TestHTTPServer.start()
/// server.serve("/files/a.bin", Resource(.generated(size: 100 << 20, seed: 1), etag: "v1"))
/// let url = server.url("/files/a.bin")          // http://127.0.0.1:PORT/files/a.bin
/// // ... run the client ...
/// XCTAssertEqual(server.requests(to: "/files/a.bin").count, 1)
/// try await server.stop()
/// ```
///
/// - Note: Thread-safe: every method may be called from any thread or task. All mutable state
///   (routes, failure queues, counters, recorded requests, open connections) is in one struct
///   behind one lock; connections run on the event loops of NIO's shared
///   `MultiThreadedEventLoopGroup.singleton`.
/// - Important: Call ``stop()`` when done. A server released without it closes its listening
///   socket and connections in `deinit`, without waiting.
public final class TestHTTPServer: Sendable {
    /// The port the server listens on (the one picked by the system when started with port 0).
    public let port: Int

    /// The origin of the server, e.g. `http://127.0.0.1:54321`, with no trailing slash.
    public let baseURL: URL

    private let origin: String
    private let listener: any Channel
    private let state: NIOLockedValueBox<ServerState>

    private init(listener: any Channel, state: NIOLockedValueBox<ServerState>, origin: String, port: Int) {
        self.listener = listener
        self.state = state
        self.origin = origin
        self.port = port
        guard let baseURL = URL(string: origin) else {
            preconditionFailure("cannot make a URL of \(origin)")
        }
        self.baseURL = baseURL
    }

    deinit {
        self.listener.close(promise: nil)
        let connections = self.state.withLockedValue { state in
            state.isStopped = true
            return Array(state.openConnections.values)
        }
        for connection in connections {
            connection.close(promise: nil)
        }
    }

    /// Starts a server listening on `host` and `port`.
    ///
    /// ```swift
    /// let server = try await TestHTTPServer.start()   // 127.0.0.1, a free port
    /// ```
    ///
    /// - Parameters:
    ///   - host: The address to listen on; keep the default loopback address.
    ///   - port: The port, or 0 to let the system pick a free one (see ``port``).
    /// - Returns: The running server, with no routes.
    /// - Throws: The bind error, e.g. when the port is taken.
    public static func start(host: String = "127.0.0.1", port: Int = 0) async throws -> TestHTTPServer {
        let state = NIOLockedValueBox(ServerState())
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 128 * 1024, high: 512 * 1024))
            .childChannelInitializer { channel in
                Self.initialize(channel, state: state)
            }
        let listener = try await bootstrap.bind(host: host, port: port).get()
        guard let address = listener.localAddress, let ip = address.ipAddress, let boundPort = address.port else {
            listener.close(promise: nil)
            throw ChannelError.unknownLocalAddress
        }
        let origin: String
        if case .v6 = address {
            origin = "http://[\(ip)]:\(boundPort)"
        } else {
            origin = "http://\(ip):\(boundPort)"
        }
        return TestHTTPServer(listener: listener, state: state, origin: origin, port: boundPort)
    }

    /// Sets up an accepted connection, or closes it when the server is stopping.
    private static func initialize(_ channel: any Channel, state: NIOLockedValueBox<ServerState>) -> EventLoopFuture<Void> {
        guard let number = state.withLockedValue({ $0.accept(channel) }) else {
            return channel.close()
        }
        let id = ObjectIdentifier(channel)
        channel.closeFuture.whenComplete { _ in
            _ = state.withLockedValue { $0.openConnections.removeValue(forKey: id) }
        }
        return channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes)))
            try pipeline.addHandler(HTTPConnectionHandler(state: state, connection: number))
        }
    }

    /// Stops the server: closes the listening socket and every open connection, and waits for them.
    ///
    /// Responses in progress (stalled, throttled or streaming) end at once; their scheduled tasks
    /// are cancelled. When `stop()` returns, no connection of this server is open and new
    /// connections are refused. Calling it again does nothing more.
    ///
    /// - Throws: Only unexpected errors while closing the listening socket.
    public func stop() async throws {
        self.state.withLockedValue { $0.isStopped = true }
        do {
            try await self.listener.close()
        } catch ChannelError.alreadyClosed {
            // Stopped before.
        }
        // A connection accepted just before the listener closed may still be waiting to be set up
        // on its event loop: one empty task on every loop lets those set-ups run first (they are
        // queued earlier), so that they are in `openConnections` or have seen `isStopped`.
        for eventLoop in MultiThreadedEventLoopGroup.singleton.makeIterator() {
            try? await eventLoop.submit {}.get()
        }
        let connections = self.state.withLockedValue { Array($0.openConnections.values) }
        for connection in connections {
            connection.close(promise: nil)
        }
        for connection in connections {
            try? await connection.closeFuture.get()
        }
    }

    /// Ends every slow response: the routes served now and the bodies under way are sent at full speed.
    ///
    /// Bodies under way lose their ``Resource/bytesPerSecond`` pace and their
    /// ``Resource/Failure/stall(afterBytes:seconds:)`` (a stall under way ends at once, one still to come
    /// does not happen), and the routes served now lose their pace (their failures and versions go on as
    /// they were: a later request still consumes a stall). A route served after this call is paced as
    /// its resource says. When this returns, every open connection has been told.
    ///
    /// A test paces a body to keep a download running while it looks at it, then lifts the pace so that
    /// the download ends without waiting out the rest of its time:
    ///
    /// ```swift
    /// server.serve("/big.bin", Resource(.generated(size: 2 << 20, seed: 1), bytesPerSecond: 128 << 10))
    /// // … start the download, check what it shows while it runs …
    /// await server.liftPace()
    /// // … wait for the download to end.
    /// ```
    public func liftPace() async {
        let connections = self.state.withLockedValue { state in
            for path in state.routes.keys {
                state.routes[path]?.resource.bytesPerSecond = nil
            }
            return Array(state.openConnections.values)
        }
        for connection in connections {
            // A response admitted before the routes changed is streaming by the time this task runs: its
            // admission and its first piece are one task on the same event loop.
            try? await connection.eventLoop.submit {
                let context = try connection.pipeline.syncOperations.context(handlerType: HTTPConnectionHandler.self)
                (context.handler as? HTTPConnectionHandler)?.liftPace(context: context)
            }.get()
        }
    }

    /// Returns the URL of `path` on this server, e.g. `http://127.0.0.1:PORT/files/a.bin`.
    ///
    /// - Parameter path: A path, with or without a leading `/`, optionally with a query.
    /// - Returns: The absolute URL.
    /// - Precondition: `path` is valid in a URL (percent-encode spaces and the like).
    public func url(_ path: String) -> URL {
        let path = path.hasPrefix("/") ? path : "/" + path
        guard let url = URL(string: self.origin + path) else {
            preconditionFailure("not a valid URL path: \(path)")
        }
        return url
    }

    /// Adds a route, or replaces the route at `path`.
    ///
    /// Replacing restarts the route: its ``Resource/failures`` are consumed from the first again
    /// and its ``Resource/versions(_:)`` from the first version. Requests already being answered
    /// finish with the resource they started with.
    ///
    /// - Parameters:
    ///   - path: The exact path to match, without query, e.g. `/files/a.bin`. Queries are ignored
    ///     for matching (`/files/a.bin?x=1` matches).
    ///   - resource: What to answer.
    public func serve(_ path: String, _ resource: Resource) {
        self.state.withLockedValue { $0.routes[path] = ServerState.Route(resource: resource) }
    }

    /// Removes the route at `path`: requests for it get `404` from now on.
    ///
    /// - Parameter path: The path given to ``serve(_:_:)``.
    public func removeRoute(_ path: String) {
        _ = self.state.withLockedValue { $0.routes.removeValue(forKey: path) }
    }

    /// Returns every request received for `path` (any query), in order, since the start or the last
    /// ``resetCounters()``.
    ///
    /// - Parameter path: A path without query.
    /// - Returns: The recorded requests.
    public func requests(to path: String) -> [RecordedRequest] {
        self.state.withLockedValue { state in state.recorded.filter { $0.path == path } }
    }

    /// Every request received, for any path, in order, since the start or the last ``resetCounters()``.
    public var allRequests: [RecordedRequest] {
        self.state.withLockedValue { $0.recorded }
    }

    /// The number of requests received (all paths, unknown ones included) since the start or the
    /// last ``resetCounters()``.
    public var requestCount: Int {
        self.state.withLockedValue { $0.recorded.count }
    }

    /// The number of TCP connections accepted since the start or the last ``resetCounters()``.
    ///
    /// A client that reuses connections shows a `connectionCount` far below ``requestCount``.
    public var connectionCount: Int {
        self.state.withLockedValue { $0.connectionCount }
    }

    /// The most responses the server was sending at one time (from the request's head to the last byte
    /// of the body, or the connection's end), since the start or the last ``resetCounters()``: how many
    /// transfers a client ran at once, when the responses take long enough to overlap (a paced body).
    public var mostResponsesAtOnce: Int {
        self.state.withLockedValue { $0.mostResponsesAtOnce }
    }

    /// Forgets the recorded requests and sets ``requestCount``, ``connectionCount`` and
    /// ``mostResponsesAtOnce`` to zero (responses under way still count).
    ///
    /// Routes, their remaining failures and their version counters are left as they are, and so are
    /// open connections. ``RecordedRequest/connection`` numbers keep increasing.
    public func resetCounters() {
        self.state.withLockedValue { state in
            state.recorded.removeAll()
            state.connectionCount = 0
            state.mostResponsesAtOnce = state.responsesNow
        }
    }
}
