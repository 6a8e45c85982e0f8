import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import TestSupport

/// A loopback TCP proxy (to the broker, or to Warren for the client libraries' tests) that can
/// play an outage: when down, it drops every open connection and refuses (closes at once) new
/// ones; muted, it drops what the target sends; refusing, it answers every new connection's
/// request with a 503 (a proxy that lets no WebSocket through); it can send its clients
/// bytes of its own, as if from the target, and hold back the answer to one request (its
/// connection spared by outages) until released; and it lists the requests that went through.
final class OutageProxy: Sendable {
    private struct State {
        var down = false
        var muted = false
        var refusing = false
        var open: [ObjectIdentifier: any Channel] = [:]
        var clients: Set<ObjectIdentifier> = []
        /// The next request whose first line starts with this has its answer held.
        var holdPrefix: String?
        var holders: [AnswerHolder] = []
        /// Connections an outage leaves alone (the held answer's).
        var spared: Set<ObjectIdentifier> = []
        var requestLines: [String] = []
    }

    let port: Int
    private let server: any Channel
    private let state: NIOLockedValueBox<State>

    private init(port: Int, server: any Channel, state: NIOLockedValueBox<State>) {
        self.port = port
        self.server = server
        self.state = state
    }

    static func start(to target: Int) async throws -> OutageProxy {
        let state = NIOLockedValueBox(State())
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                let (down, refusing) = state.withLockedValue { ($0.down, $0.refusing) }
                if down { return inbound.close() }
                if refusing { return inbound.pipeline.addHandler(RefuseHandler()) }
                return ClientBootstrap(group: inbound.eventLoop).connect(host: "127.0.0.1", port: target).flatMap { outbound in
                    state.withLockedValue {
                        $0.open[ObjectIdentifier(inbound)] = inbound
                        $0.open[ObjectIdentifier(outbound)] = outbound
                        $0.clients.insert(ObjectIdentifier(inbound))
                    }
                    let holder = AnswerHolder(eventLoop: inbound.eventLoop) { bytes in
                        let head = bytes.getString(at: bytes.readerIndex, length: min(bytes.readableBytes, 80)) ?? ""
                        let line = head.split(separator: "\r\n", maxSplits: 1).first.map(String.init) ?? ""
                        return state.withLockedValue { s in
                            if ["GET ", "POST ", "PUT ", "DELETE "].contains(where: line.hasPrefix) { s.requestLines.append(line) }
                            guard let prefix = s.holdPrefix, line.hasPrefix(prefix) else { return false }
                            s.holdPrefix = nil
                            s.spared.formUnion([ObjectIdentifier(inbound), ObjectIdentifier(outbound)])
                            return true
                        }
                    }
                    state.withLockedValue { $0.holders.append(holder) }
                    let (a, b) = SpliceHandler.pair(isFrozen: { false }, { state.withLockedValue { $0.muted } })
                    return inbound.pipeline.addHandlers([holder, a]).and(outbound.pipeline.addHandler(b)).map { _ in }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return OutageProxy(port: server.localAddress!.port!, server: server, state: state)
    }

    func setDown(_ down: Bool) {
        state.withLockedValue { $0.down = down }
        if down { cut() }
    }

    /// Closes every open connection (new ones are let through).
    func cut() {
        let toClose = state.withLockedValue { s -> [any Channel] in
            let closing = s.open.filter { !s.spared.contains($0.key) }
            for id in closing.keys {
                s.open[id] = nil
                s.clients.remove(id)
            }
            return Array(closing.values)
        }
        for c in toClose { c.close(promise: nil) }
    }

    /// Writes `bytes` to every open client connection, as if the target had sent them.
    func inject(_ bytes: [UInt8]) {
        let clients = state.withLockedValue { s in s.clients.compactMap { s.open[$0] } }
        for c in clients { c.writeAndFlush(ByteBuffer(bytes: bytes), promise: nil) }
    }

    /// Holds back the answer to the next request whose first line starts with `prefix`
    /// (`"POST /v1/messages"`) until ``releaseHeld()``; outages leave its connection alone.
    func holdAnswer(to prefix: String) { state.withLockedValue { $0.holdPrefix = prefix } }

    func releaseHeld() {
        let holders = state.withLockedValue { s -> [AnswerHolder] in
            s.spared.removeAll()
            return s.holders
        }
        for h in holders { h.release() }
    }

    /// The first lines of the requests that went through, in order.
    var requests: [String] { state.withLockedValue { $0.requestLines } }

    /// Drops (while on) whatever the target sends to the clients.
    func setMuted(_ muted: Bool) { state.withLockedValue { $0.muted = muted } }

    /// Answers (while on) every new connection with a 503.
    func setRefusing(_ refusing: Bool) { state.withLockedValue { $0.refusing = refusing } }

    func stop() async { try? await server.close() }
}

/// Answers the first bytes of a connection with a 503 and closes it.
private final class RefuseHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { context.read() }
    }

    func channelActive(context: ChannelHandlerContext) {
        context.read()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let body = #"{"error":{"code":"unavailable","message":"no WebSockets through this proxy"}}"#
        let answer = "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: \(body.utf8.count)\r\n"
            + "connection: close\r\n\r\n" + body
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: answer))).whenComplete { _ in channel.close(promise: nil) }
    }
}
