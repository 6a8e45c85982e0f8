import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// A client WebSocket on SwiftNIO: text frames in and out, pings answered, a silent connection
/// pinged and given up on, the close code reported. Its events end with one `.closed`.
final class WebSocketConnection: Sendable {
    enum Event: Sendable {
        case text(String)
        /// The connection ended: Warren's close code, nil when the socket just went.
        case closed(code: UInt16?)
    }

    let events: AsyncStream<Event>
    private let channel: any Channel

    private init(channel: any Channel, events: AsyncStream<Event>) {
        self.channel = channel
        self.events = events
    }

    /// Connects and upgrades; throws a ``WarrenError`` when the upgrade is refused (with the
    /// HTTP status Warren answered), the server cannot be reached, or the upgrade is not
    /// answered within `timeout`. Once open, the socket is pinged after `heartbeat` without a
    /// frame from Warren, and closed (`.closed(code: nil)`) when `timeout` passes after that
    /// ping with still nothing.
    static func connect(to url: URL, heartbeat: Duration = .seconds(25), timeout: Duration = .seconds(20)) async throws -> WebSocketConnection {
        let (heartbeat, timeout) = (TimeAmount(heartbeat), TimeAmount(timeout))
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false), let host = components.host else {
            throw WarrenError("bad_frame", "not a WebSocket URL: \(url)")
        }
        let tls = components.scheme == "wss" || components.scheme == "https"
        let port = components.port ?? (tls ? 443 : 80)
        let target = (components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath)
            + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
        let (events, continuation) = AsyncStream.makeStream(of: Event.self)
        let group = MultiThreadedEventLoopGroup.singleton
        let upgraded = group.next().makePromise(of: Void.self)
        let bootstrap = ClientBootstrap(group: group)
            .connectTimeout(timeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if tls {
                        let context = try NIOSSLContext(configuration: .makeClientConfiguration())
                        try sync.addHandler(NIOSSLClientHandler(context: context, serverHostname: host))
                    }
                    let upgrader = NIOWebSocketClientUpgrader(maxFrameSize: 1 << 24) { channel, _ in
                        channel.eventLoop.makeCompletedFuture {
                            let sync = channel.pipeline.syncOperations
                            // The request writer speaks HTTP: it leaves with the HTTP handlers.
                            sync.removeHandler(try sync.handler(type: UpgradeRequestHandler.self), promise: nil)
                            try sync.addHandler(IdleStateHandler(readTimeout: heartbeat))
                            try sync.addHandler(FrameHandler(continuation, answerWithin: timeout))
                            upgraded.succeed(())
                        }
                    }
                    try sync.addHTTPClientHandlers(withClientUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
                    try sync.addHandler(UpgradeRequestHandler(host: host, port: port, target: target, refused: upgraded))
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.connect(host: host, port: port).get()
        } catch {
            upgraded.fail(error)
            continuation.finish()
            throw WarrenError("unavailable", "cannot reach \(host):\(port): \(error)")
        }
        channel.closeFuture.whenComplete { _ in
            upgraded.fail(WarrenError("unavailable", "the connection closed during the upgrade"))
        }
        // A server (or a proxy) that takes the connection and never answers is given up on.
        let deadline = channel.eventLoop.scheduleTask(in: timeout) {
            upgraded.fail(WarrenError("unavailable", "no answer to the WebSocket upgrade within \(timeout)"))
        }
        upgraded.futureResult.whenComplete { _ in deadline.cancel() }
        do {
            try await upgraded.futureResult.get()
        } catch {
            channel.close(promise: nil)
            continuation.finish()
            throw error
        }
        return WebSocketConnection(channel: channel, events: events)
    }

    /// Sends a text frame (masked, as a client must).
    func send(_ text: String) {
        let channel = self.channel
        var buffer = channel.allocator.buffer(capacity: text.utf8.count)
        buffer.writeString(text)
        let frame = WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: buffer)
        channel.writeAndFlush(frame, promise: nil)
    }

    /// Closes with `code` (the socket goes once Warren answers, or at once if it is gone).
    func close(code: UInt16 = 1000) {
        let channel = self.channel
        var data = channel.allocator.buffer(capacity: 2)
        data.writeInteger(code)
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: data)).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}

/// Writes the upgrade request; an answer that is not an upgrade fails `refused` with its status.
private final class UpgradeRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    let host: String
    let port: Int
    let target: String
    let refused: EventLoopPromise<Void>

    init(host: String, port: Int, target: String, refused: EventLoopPromise<Void>) {
        self.host = host
        self.port = port
        self.target = target
        self.refused = refused
    }

    func channelActive(context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "\(host):\(port)")
        headers.add(name: "Content-Length", value: "0")
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: target, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let response) = unwrapInboundIn(data) {
            refused.fail(WarrenError(Self.code(response.status.code), "the WebSocket upgrade was refused: \(response.status.code)",
                                     status: Int(response.status.code)))
            context.close(promise: nil)
        }
    }

    static func code(_ status: UInt) -> String {
        switch status {
        case 401: "unauthorized"
        case 400: "bad_frame"
        case 403: "forbidden"
        case 429: "rate_limited"
        default: "unavailable"
        }
    }
}

/// Text frames to the event stream; pings answered; a close frame's code kept for the end. A
/// connection the `IdleStateHandler` before it finds silent is pinged, and closed when nothing
/// comes within `answerWithin` after.
private final class FrameHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let continuation: AsyncStream<WebSocketConnection.Event>.Continuation
    private let answerWithin: TimeAmount
    private var closeCode: UInt16?
    private var fragments: ByteBuffer?
    /// Closes the connection unless a frame comes first (set when the silent socket was pinged).
    private var unanswered: Scheduled<Void>?

    init(_ continuation: AsyncStream<WebSocketConnection.Event>.Continuation, answerWithin: TimeAmount) {
        self.continuation = continuation
        self.answerWithin = answerWithin
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if let unanswered {
            unanswered.cancel()
            self.unanswered = nil
        }
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            if frame.fin { continuation.yield(.text(String(buffer: frame.unmaskedData))) } else { fragments = frame.unmaskedData }
        case .continuation:
            guard var buffer = fragments else { return }
            var more = frame.unmaskedData
            buffer.writeBuffer(&more)
            if frame.fin {
                fragments = nil
                continuation.yield(.text(String(buffer: buffer)))
            } else {
                fragments = buffer
            }
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            var data = frame.unmaskedData
            closeCode = data.readInteger(as: UInt16.self)
            // Answered with the same code, then the socket goes.
            var echo = context.channel.allocator.buffer(capacity: 2)
            echo.writeInteger(closeCode ?? 1000)
            let reply = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: echo)
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(reply)).whenComplete { _ in channel.close(promise: nil) }
        default:
            break
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read else {
            return context.fireUserInboundEventTriggered(event)
        }
        guard unanswered == nil else { return }
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .ping, maskKey: .random(), data: ByteBuffer())), promise: nil)
        let channel = context.channel
        unanswered = context.eventLoop.scheduleTask(in: answerWithin) { channel.close(promise: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        unanswered?.cancel()
        unanswered = nil
        continuation.yield(.closed(code: closeCode))
        continuation.finish()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
