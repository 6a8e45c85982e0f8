import Logging
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing
import WarrenCore
@testable import WarrenHTTP

@Suite("The WebSocket connection handler on an embedded channel")
struct WebSocketConnectionHandlerTests {
    /// A closed socket's handler goes, and with it its session, output and channel. Before
    /// 2026-11-29 the output's close closure held the handler and the handler its output, so
    /// every WebSocket a node ever served stayed in memory (~5.6 KB each, measured churning
    /// connections against a running node: RSS grew without bound).
    @Test func aClosedSocketLetsGoOfItsHandler() async throws {
        let logger = Logger(label: "test")
        let broker = UnreachableBroker()
        let hub = LiveHub(channel: broker, bindChannel: broker, queue: "warren.live.test", exchange: "chat",
                          bindAllAfter: 0, metrics: .disabled, logger: logger)
        let runtime = BridgeRuntime(channels: broker, publisher: Publisher(channel: broker, exchange: "chat", metrics: .disabled, logger: logger),
                                    hub: hub, exchange: "chat", limits: BridgeLimits(), inbox: InboxSettings(), policy: .standard,
                                    metrics: .disabled, logger: logger)
        let configuration = BridgeConfiguration()
        let door = WebSocketDoor(configuration: configuration, link: BrokerLink(configuration: configuration, logger: logger),
                                 authenticator: Authenticator(configuration: configuration, tokens: nil, metrics: .disabled),
                                 sockets: OpenSockets(), logger: logger)
        #expect(runtime.users.openConnection("alice"))
        let admitted = WebSocketDoor.Admitted(identity: ClientIdentity(user: "alice", device: "web", policy: .standard),
                                              expiresAt: nil, runtime: runtime)

        weak var weakHandler: WebSocketConnectionHandler?
        do {
            let channel = EmbeddedChannel()
            let handler = WebSocketConnectionHandler(door: door, admitted: admitted)
            weakHandler = handler
            try channel.pipeline.syncOperations.addHandler(handler)
            #expect(door.sockets.count == 1)
            // The session answers a frame: the handler, session and output are in use.
            let ping = ByteBuffer(string: #"{"op":"ping"}"#)
            try channel.writeInbound(WebSocketFrame(fin: true, opcode: .text, maskKey: WebSocketMaskingKey([0, 0, 0, 0]), data: ping))
            channel.embeddedEventLoop.run()
            let pong = try #require(try channel.readOutbound(as: ByteBuffer.self))
            #expect(String(buffer: pong).contains(#""op":"pong""#))
            _ = try channel.finish(acceptAlreadyClosed: true)
            #expect(door.sockets.count == 0)
        }
        // The session's end runs in a task of its own; once it has, nothing holds the handler.
        for _ in 0..<1_000 where weakHandler != nil { try await Task.sleep(for: .milliseconds(10)) }
        #expect(weakHandler == nil, "the closed socket's handler is still held")
    }
}
