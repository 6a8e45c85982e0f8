import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import Testing
import WarrenCore
@testable import WarrenHTTP

/// The NIO driver of the connection state machine, on an embedded channel: what the machine
/// says becomes the channel's writes, closes, held reads and timers. The node behind it has
/// no broker link, so polls and WebSocket handshakes are refused `503` at once.
@Suite("The HTTP connection handler on an embedded channel")
struct HTTPConnectionHandlerTests {
    /// A read-counting handler in front of the connection's, so a held `read` shows.
    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = ByteBuffer
        var reads = 0
        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    static func edge() async -> EdgeContext {
        let configuration = BridgeConfiguration()
        let logger = Logger(label: "test")
        let link = BrokerLink(configuration: configuration, logger: logger)
        let authenticator = Authenticator(configuration: configuration, tokens: nil, metrics: .disabled)
        let polls = PollRoutes(configuration: configuration, link: link, authenticator: authenticator,
                               codec: await PollSessionCodec.make(secret: ""))
        let router = Router(context: WarrenRequestContext.self)
        HTTPFrontend.readOnly(router, "healthz") { Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "ok"))) }
        let webSockets = WebSocketDoor(configuration: configuration, link: link, authenticator: authenticator, sockets: OpenSockets(),
                                       logger: logger)
        let settings = HTTPConnectionStateMachine.Settings(headTimeout: .seconds(10), idleTimeout: .seconds(75), maxBody: 1024)
        return EdgeContext(polls: polls, router: RouterEndpoint(responder: router.buildResponder(), logger: logger), cors: nil,
                           webSockets: webSockets, authenticator: authenticator, settings: settings, budget: BodyBudget(limit: 1 << 20),
                           metrics: .disabled)
    }

    static func channel() async throws -> (EmbeddedChannel, ReadCounter) {
        let channel = EmbeddedChannel()
        let counter = ReadCounter()
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHandler(HTTPConnectionHandler(await edge()))
        try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
        return (channel, counter)
    }

    static func written(_ channel: EmbeddedChannel) throws -> String {
        var text = ""
        while let bytes = try channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: bytes) }
        return text
    }

    @Test func aPollWithoutABrokerLinkIsAnswered503AndTheConnectionKept() async throws {
        let (channel, _) = try await Self.channel()
        try channel.writeInbound(ByteBuffer(string: "GET /v1/poll/s?user=u HTTP/1.1\r\nHost: x\r\n\r\n"))
        let answer = try Self.written(channel)
        #expect(answer.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n"), "\(answer)")
        #expect(answer.contains(#""code":"unavailable""#))
        #expect(channel.isActive)
        _ = try? channel.finish()
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        let (channel, _) = try await Self.channel()
        let poll = "GET /v1/poll/s?user=u HTTP/1.1\r\nHost: x\r\n\r\n"
        try channel.writeInbound(ByteBuffer(string: poll + "GET /v1/poll/s?user=u&wait=-1 HTTP/1.1\r\nHost: x\r\n\r\n" + poll))
        let answers = try Self.written(channel).components(separatedBy: "HTTP/1.1 ").dropFirst().map { String($0.prefix(3)) }
        #expect(answers == ["503", "503", "503"], "the service is checked before wait")
        _ = try? channel.finish()
    }

    /// Probe: `Host` missing → 400, and the connection's output closes (an embedded channel
    /// cannot half-close, so it closes whole).
    @Test func aHeadWithoutHostIsRefused400AndClosed() async throws {
        let (channel, _) = try await Self.channel()
        try channel.writeInbound(ByteBuffer(string: "GET /healthz HTTP/1.1\r\n\r\n"))
        let answer = try Self.written(channel)
        #expect(answer.hasPrefix("HTTP/1.1 400 Bad Request\r\n") && answer.contains("connection: close"), "\(answer)")
        channel.embeddedEventLoop.run()
        #expect(!channel.isActive)
    }

    /// Probes: a WebSocket key that is not 16 bytes is a 400, a version other than 13 a 426
    /// naming 13; a good handshake with no broker link is a 503.
    @Test func webSocketHandshakesAreCheckedAsRFC6455Says() async throws {
        let head = "GET /v1/ws?user=u HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        let cases = [
            ("Sec-WebSocket-Key: abc\r\nSec-WebSocket-Version: 13\r\n", "400", nil),
            ("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n", "426", "sec-websocket-version: 13"),
            ("Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n", "503", nil),
        ]
        for (fields, status, header) in cases {
            let (channel, _) = try await Self.channel()
            try channel.writeInbound(ByteBuffer(string: head + fields + "\r\n"))
            let answer = try Self.written(channel)
            #expect(answer.hasPrefix("HTTP/1.1 \(status) "), "\(answer)")
            if let header { #expect(answer.contains(header + "\r\n"), "\(answer)") }
            _ = try? channel.finish()
        }
    }

    /// Probe: a head trickled in is closed at the head timeout, on the loop's clock.
    @Test func aHeadNotWholeInTimeIsClosed() async throws {
        let (channel, _) = try await Self.channel()
        try channel.writeInbound(ByteBuffer(string: "GET /healthz HTTP/1.1\r\nHo"))
        channel.embeddedEventLoop.advanceTime(by: .seconds(9))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive)
    }

    /// Probe: while the output is backed up (the channel not writable), the connection holds
    /// the channel's reads and serves nothing; when it drains, the held read goes out and the
    /// requests read meanwhile are answered.
    @Test func readsAreHeldWhileTheOutputIsBackedUp() async throws {
        let (channel, counter) = try await Self.channel()
        channel.read()
        #expect(counter.reads == 1)
        channel.isWritable = false
        channel.pipeline.fireChannelWritabilityChanged()
        channel.read()
        #expect(counter.reads == 1, "a read while backed up is held")
        try channel.writeInbound(ByteBuffer(string: "GET /v1/poll/s?user=u HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(try Self.written(channel).isEmpty, "nothing served while backed up")
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
        #expect(try Self.written(channel).hasPrefix("HTTP/1.1 503 "))
        #expect(counter.reads == 2, "the held read went out")
        _ = try? channel.finish()
    }

    /// A router endpoint is answered from its task, on the connection's loop.
    @Test func aRouterEndpointIsAnswered() async throws {
        let (channel, _) = try await Self.channel()
        try channel.writeInbound(ByteBuffer(string: "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nHEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
        var text = ""
        for _ in 0..<2_000 where text.components(separatedBy: "HTTP/1.1 200").count < 3 {
            channel.embeddedEventLoop.run()
            text += try Self.written(channel)
            if text.components(separatedBy: "HTTP/1.1 200").count < 3 { try await Task.sleep(for: .milliseconds(1)) }
        }
        let parts = text.components(separatedBy: "\r\n\r\n")
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n") && text.contains("content-length: 2\r\n") && text.contains("server: warren"), "\(text)")
        #expect(parts.count == 3 && parts[1].hasPrefix("okHTTP/1.1 200 OK") && parts[2].isEmpty, "HEAD's answer has no body: \(text)")
        _ = try? channel.finish()
    }
}
