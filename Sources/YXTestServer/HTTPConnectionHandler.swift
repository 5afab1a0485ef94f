import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// Answers the requests of one TCP connection, one at a time, in the order they arrive.
///
/// Requests come decoded by NIO's `HTTPRequestDecoder`; responses are written as raw bytes, so
/// that every header, every chunk frame and every early close is exactly what the plan says.
/// Bodies are streamed in pieces of at most 64 KiB with back-pressure: a piece is written only
/// while the channel is writable, and streaming resumes from `channelWritabilityChanged`, so the
/// memory used per connection stays around the write-buffer high-water mark whatever the size of
/// the body. Pacing and stalls are tasks scheduled on the event loop; nothing blocks or sleeps.
///
/// - Note: Owned by its channel's pipeline and confined to the channel's event loop, like every
///   NIO handler: all methods and all scheduled closures run there (checked in ``pump(context:)``).
final class HTTPConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = ByteBuffer

    /// The largest piece of body written at once.
    static let maximumPieceSize = 64 * 1024

    /// How many pieces are written before giving other channels on the event loop a turn.
    static let piecesPerTurn = 16

    /// Why a body is not being written right now.
    private enum Wait {
        /// Not waiting: ``pump(context:)`` may write.
        case none

        /// Until `channelWritabilityChanged` says the channel is writable again.
        case writability

        /// Until a scheduled task (pace, stall, or a turn given to other channels) runs.
        case task(Scheduled<Void>?)
    }

    /// The body being sent.
    private struct Streaming {
        /// What to send.
        var body: ResponsePlan.Body

        /// Whether to close the connection after the body.
        var closesConnection: Bool

        /// Body bytes sent so far (payload only, not chunk framing).
        var sent: Int64 = 0

        /// Whether the body's interruption (a stall) has already happened.
        var interruptionDone = false

        /// When pacing started (the start of the body, or the end of a stall).
        var paceStart: NIODeadline

        /// Body bytes sent since `paceStart`.
        var paceSent: Int64 = 0

        /// Why writing is paused.
        var wait: Wait = .none

        /// The size of one piece: 64 KiB, or 1/20 of the paced rate.
        var pieceSize: Int64 {
            guard let rate = self.body.bytesPerSecond else { return Int64(HTTPConnectionHandler.maximumPieceSize) }
            return Int64(min(max(rate / 20, 1), HTTPConnectionHandler.maximumPieceSize))
        }
    }

    private let state: NIOLockedValueBox<ServerState>
    private let connection: Int
    private var origin = "http://127.0.0.1"
    private var partialHead: HTTPRequestHead?
    private var queued = CircularBuffer<HTTPRequestHead>()
    private var isResponding = false {
        didSet {
            // Counted for ``TestHTTPServer/mostResponsesAtOnce``.
            guard isResponding != oldValue else { return }
            let responding = isResponding
            self.state.withLockedValue { $0.responseStarted(responding) }
        }
    }
    private var isClosed = false
    private var isInputClosed = false
    private var streaming: Streaming?

    /// Numbers the tasks scheduled to resume writing: a task runs ``resume(context:restartingPace:serial:)``
    /// only while its number is the latest, so a task cancelled too late (its timer was already due in
    /// the event loop's turn) does nothing.
    private var waitSerial: UInt64 = 0

    /// Creates the handler for connection number `connection` of the server whose state is `state`.
    init(state: NIOLockedValueBox<ServerState>, connection: Int) {
        self.state = state
        self.connection = connection
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if let address = context.channel.localAddress, let ip = address.ipAddress, let port = address.port {
            if case .v6 = address {
                self.origin = "http://[\(ip)]:\(port)"
            } else {
                self.origin = "http://\(ip):\(port)"
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            self.partialHead = head
        case .body:
            break  // Request bodies are read and ignored.
        case .end:
            if let head = self.partialHead {
                self.partialHead = nil
                self.queued.append(head)
                self.startNextIfIdle(context: context)
            }
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, case .writability = self.streaming?.wait {
            self.streaming?.wait = .none
            self.pump(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            // The client shut down its sending side: answer what was asked, then close.
            self.isInputClosed = true
            self.closeIfDrained(context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.isClosed = true
        self.isResponding = false
        self.queued.removeAll()
        if case .task(let scheduled) = self.streaming?.wait {
            scheduled?.cancel()
        }
        self.streaming = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !self.isClosed else { return }
        if error is HTTPParserError, !self.isResponding {
            // A malformed request: say so, then close, as nothing sensible can follow on this connection.
            var buffer = context.channel.allocator.buffer(capacity: 80)
            buffer.writeString("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            context.write(self.wrapOutboundOut(buffer), promise: nil)
            self.closeAfterPendingWrites(context: context)
        } else {
            // A reset by the peer, or garbage in the middle of a response.
            self.isClosed = true
            context.close(promise: nil)
        }
    }

    /// Starts answering the next queued request unless a response is in progress.
    private func startNextIfIdle(context: ChannelHandlerContext) {
        guard !self.isResponding, !self.isClosed, let head = self.queued.popFirst() else { return }
        self.isResponding = true

        let request = RecordedRequest(
            method: head.method.rawValue,
            target: head.uri,
            headers: head.headers.map { (name: $0.name, value: $0.value) },
            version: "HTTP/\(head.version.major).\(head.version.minor)",
            connection: self.connection
        )
        let admission = self.state.withLockedValue { $0.admit(request) }
        let plan = ResponsePlan.make(for: request, admission: admission, origin: self.origin, keepAlive: head.isKeepAlive)

        if plan.disconnectsImmediately {
            self.isClosed = true
            context.close(promise: nil)
            return
        }
        context.write(self.wrapOutboundOut(plan.headBytes(allocator: context.channel.allocator)), promise: nil)
        if let body = plan.body {
            self.streaming = Streaming(body: body, closesConnection: plan.closesConnection, paceStart: .now())
            self.pump(context: context)
        } else {
            self.finishResponse(context: context, closesConnection: plan.closesConnection)
        }
    }

    /// Writes as much of the current body as back-pressure, pace and interruptions allow.
    private func pump(context: ChannelHandlerContext) {
        context.eventLoop.preconditionInEventLoop()
        var piecesThisTurn = 0
        while !self.isClosed, var streaming = self.streaming, case .none = streaming.wait {
            let length = Int64(streaming.body.range.count)
            var limit = length

            if let interruption = streaming.body.interruption, !streaming.interruptionDone {
                if streaming.sent == interruption.afterBytes {
                    switch interruption {
                    case .close:
                        self.streaming = nil
                        self.isResponding = false
                        self.closeAfterPendingWrites(context: context)
                    case .stall(_, let pause):
                        context.flush()
                        streaming.interruptionDone = true
                        streaming.wait = .task(self.schedule(context: context, at: .now() + pause, restartingPace: true))
                        self.streaming = streaming
                    }
                    return
                }
                limit = interruption.afterBytes
            }

            if streaming.sent == length {
                if streaming.body.chunked {
                    var end = context.channel.allocator.buffer(capacity: 5)
                    end.writeString("0\r\n\r\n")
                    context.write(self.wrapOutboundOut(end), promise: nil)
                }
                self.streaming = nil
                self.finishResponse(context: context, closesConnection: streaming.closesConnection)
                return
            }

            if !context.channel.isWritable {
                streaming.wait = .writability
                self.streaming = streaming
                return
            }

            if let rate = streaming.body.bytesPerSecond {
                let due = streaming.paceStart + .nanoseconds(Int64(Double(streaming.paceSent) * 1e9 / Double(rate)))
                if due > .now() {
                    streaming.wait = .task(self.schedule(context: context, at: due, restartingPace: false))
                    self.streaming = streaming
                    return
                }
            }

            if piecesThisTurn == Self.piecesPerTurn {
                // Let the other channels of this event loop have a turn.
                streaming.wait = .task(nil)
                self.streaming = streaming
                self.waitSerial &+= 1
                let serial = self.waitSerial
                context.eventLoop.assumeIsolated().execute { [weak self] in
                    self?.resume(context: context, restartingPace: false, serial: serial)
                }
                return
            }

            let count = min(streaming.pieceSize, limit - streaming.sent)
            let piece = self.piece(of: streaming.body, at: streaming.sent, count: Int(count), context: context)
            streaming.sent += count
            streaming.paceSent += count
            piecesThisTurn += 1
            self.streaming = streaming
            context.writeAndFlush(self.wrapOutboundOut(piece), promise: nil)
        }
    }

    /// Sends the body under way at full speed from now on: no pace, and no stall, whether it is under
    /// way or still to come in this body (``TestHTTPServer/liftPace()``).
    func liftPace(context: ChannelHandlerContext) {
        context.eventLoop.preconditionInEventLoop()
        guard !self.isClosed, var streaming = self.streaming else { return }
        streaming.body.bytesPerSecond = nil
        if case .stall = streaming.body.interruption {
            streaming.interruptionDone = true
        }
        // A pace's or a stall's task; `.task(nil)` is a turn given to other channels, which resumes by itself.
        if case .task(let scheduled?) = streaming.wait {
            scheduled.cancel()
            self.waitSerial &+= 1  // in case its timer is already due in this turn of the event loop
            streaming.wait = .none
        }
        self.streaming = streaming
        if case .none = streaming.wait {
            self.pump(context: context)
        }
    }

    /// Schedules ``resume(context:restartingPace:serial:)`` at `deadline`.
    private func schedule(context: ChannelHandlerContext, at deadline: NIODeadline, restartingPace: Bool) -> Scheduled<Void> {
        self.waitSerial &+= 1
        let serial = self.waitSerial
        return context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [weak self] in
            self?.resume(context: context, restartingPace: restartingPace, serial: serial)
        }
    }

    /// Ends a wait for the scheduled task numbered `serial` and goes on writing, unless a later task
    /// replaced it.
    private func resume(context: ChannelHandlerContext, restartingPace: Bool, serial: UInt64) {
        guard serial == self.waitSerial, !self.isClosed, self.streaming != nil else { return }
        if restartingPace {
            self.streaming?.paceStart = .now()
            self.streaming?.paceSent = 0
        }
        self.streaming?.wait = .none
        self.pump(context: context)
    }

    /// Produces the bytes at body offset `sent`, framed as a chunk if the body is chunked.
    private func piece(of body: ResponsePlan.Body, at sent: Int64, count: Int, context: ChannelHandlerContext) -> ByteBuffer {
        var buffer = context.channel.allocator.buffer(capacity: count + (body.chunked ? 12 : 0))
        if body.chunked {
            buffer.writeString(String(count, radix: 16) + "\r\n")
        }
        let offset = body.range.lowerBound + sent
        switch body.source {
        case .bytes(let data):
            let start = data.startIndex + Int(offset)
            buffer.writeBytes(data[start..<start + count])
        case .generated(_, let seed):
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { pointer in
                GeneratedContent.fill(UnsafeMutableRawBufferPointer(rebasing: pointer[0..<count]), seed: seed, offset: offset)
                return count
            }
        }
        if body.chunked {
            buffer.writeString("\r\n")
        }
        return buffer
    }

    /// Ends the current response: flushes, then closes or starts on the next queued request.
    private func finishResponse(context: ChannelHandlerContext, closesConnection: Bool) {
        self.isResponding = false
        if closesConnection {
            self.closeAfterPendingWrites(context: context)
        } else {
            context.flush()
            self.startNextIfIdle(context: context)
            self.closeIfDrained(context: context)
        }
    }

    /// Closes the connection when the client can send no more requests and all are answered.
    private func closeIfDrained(context: ChannelHandlerContext) {
        if self.isInputClosed, !self.isClosed, !self.isResponding, self.queued.isEmpty {
            self.closeAfterPendingWrites(context: context)
        }
    }

    /// Closes the connection once everything written so far has reached the socket.
    ///
    /// Closing at once would discard writes still queued in the channel.
    private func closeAfterPendingWrites(context: ChannelHandlerContext) {
        self.isClosed = true
        let flushed = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(self.wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)), promise: flushed)
        flushed.futureResult.assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}

@available(*, unavailable)
extension HTTPConnectionHandler: Sendable {}
