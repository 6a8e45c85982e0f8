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
                            sync.removeHandler(try sync.handler(type: WebSocketUpgradeRequestHandler.self), promise: nil)
                            try sync.addHandler(IdleStateHandler(readTimeout: heartbeat))
                            try sync.addHandler(WebSocketFrameHandler(continuation, answerWithin: timeout))
                            upgraded.succeed(())
                        }
                    }
                    try sync.addHTTPClientHandlers(withClientUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
                    try sync.addHandler(WebSocketUpgradeRequestHandler(host: host, port: port, target: target, refused: upgraded))
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
