import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// Opens benchmark WebSockets over loopback and hands their frames to a ``Recorder``.
public enum SocketClient {
    /// Connects, upgrades and subscribes; the future completes once the subscription is in
    /// effect (Warren's `subscribed`, Web-STOMP's RECEIPT), and carries the channel.
    public static func open(
        port: Int, path: String, dialect: SocketDialect, index: Int, recorder: Recorder
    ) -> EventLoopFuture<any Channel> {
        dial(port: port, recorder: recorder, name: "socket \(index)") { channel, ready in
            let subprotocol: String? = switch dialect {
            case .stomp, .idleStomp, .publishStomp: "v12.stomp"
            default: nil
            }
            let upgrade = RawUpgradeHandler(host: "127.0.0.1:\(port)", path: path, protocol: subprotocol, ready: ready) { pipeline in
                try pipeline.addHandler(WebSocketFrameEncoder())
                try pipeline.addHandler(ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: 1 << 20)))
                try pipeline.addHandler(BenchSocketHandler(index: index, dialect: dialect, recorder: recorder, ready: ready))
            }
            try channel.pipeline.syncOperations.addHandler(upgrade)
        }
    }
}

extension SocketClient {
    /// A client ping (masked, as RFC 6455 requires of clients): keeps Web-STOMP, which closes a
    /// socket after 60 s with nothing from the client, and Warren's idle timer satisfied.
    public static func ping(_ channel: any Channel) {
        let frame = WebSocketFrame(fin: true, opcode: .ping, maskKey: .random(), data: ByteBuffer())
        channel.writeAndFlush(frame, promise: nil)
    }
}
