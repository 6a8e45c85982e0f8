import NIOCore
import NIOWebSocket

/// Upgrades a benchmark connection to a WebSocket with the fewest moving parts: the request
/// goes out as bytes built once per socket, the answer is read up to its blank line and checked
/// (status 101 and the `Sec-WebSocket-Accept` the key asks for), then `upgraded` puts the frame
/// codec and the socket's handler behind this one, which hands them any bytes that came after
/// the head and leaves.
///
/// NIO's HTTP client with its upgrader (encoder, decoder, upgrade handler, all removed again)
/// cost the bench about as much CPU per connect as Warren spent serving it (profiled,
/// 2026-11-26), so on two shared cores the bench's own client capped the connects per second it
/// measured. Every WebSocket target gets this same client.
final class RawUpgradeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// RFC 6455's sample nonce and the accept value it asks for (§1.3): a fixed key is fine for
    /// a load tool, and the answer is still checked.
    static let key = "dGhlIHNhbXBsZSBub25jZQ=="
    static let accept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    static let maxHeadBytes = 8192

    private let request: String
    private let ready: EventLoopPromise<Void>
    private let upgraded: (ChannelPipeline.SynchronousOperations) throws -> Void
    private var head = ByteBuffer()

    init(host: String, path: String, protocol subprotocol: String?, ready: EventLoopPromise<Void>,
         upgraded: @escaping (ChannelPipeline.SynchronousOperations) throws -> Void) {
        var request = "GET \(path) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: \(Self.key)\r\nSec-WebSocket-Version: 13\r\n"
        if let subprotocol { request += "Sec-WebSocket-Protocol: \(subprotocol)\r\n" }
        self.request = request + "\r\n"
        self.ready = ready
        self.upgraded = upgraded
    }

    func channelActive(context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: request)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        head.writeBuffer(&bytes)
        let end = head.readableBytesView.withContiguousStorageIfAvailable { view -> Int? in
            guard view.count >= 4 else { return nil }
            for i in 0...(view.count - 4) where view[i] == 13 && view[i + 1] == 10 && view[i + 2] == 13 && view[i + 3] == 10 {
                return i + 4
            }
            return nil
        } ?? nil
        guard let end else {
            if head.readableBytes > Self.maxHeadBytes { refuse(context, "an upgrade answer head over \(Self.maxHeadBytes) bytes") }
            return
        }
        let text = head.readString(length: end) ?? ""
        guard text.hasPrefix("HTTP/1.1 101") else {
            return refuse(context, "upgrade answered \(text.prefix(12).dropFirst(9))")
        }
        guard text.contains(Self.accept) else { return refuse(context, "upgrade answered without the expected Sec-WebSocket-Accept") }
        do {
            let pipeline = context.pipeline.syncOperations
            try upgraded(pipeline)
            if head.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(head)) }
            head = ByteBuffer()
            pipeline.removeHandler(context: context, promise: nil)
        } catch {
            ready.fail(error)
            context.close(promise: nil)
        }
    }

    private func refuse(_ context: ChannelHandlerContext, _ why: String) {
        ready.fail(BenchError.refused(why))
        context.close(promise: nil)
    }
}
