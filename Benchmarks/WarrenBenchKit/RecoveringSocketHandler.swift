import NIOCore
import NIOWebSocket

extension SocketClient {
    /// A Warren WebSocket with one live subscription of `pattern`, `since` an envelope id when
    /// given (a resubscription after a cut): every delivery goes to the recorder (which counts a
    /// message a client got twice, across its connections) and the ledger (its last id). The
    /// future completes once the subscription is answered.
    public static func openRecovering(
        port: Int, path: String, pattern: String, since: String?, index: Int, recorder: Recorder, ledger: RecoveryLedger
    ) -> EventLoopFuture<any Channel> {
        dial(port: port, recorder: recorder, name: "socket \(index)") { channel, ready in
            let upgrade = RawUpgradeHandler(host: "127.0.0.1:\(port)", path: path, protocol: nil, ready: ready) { pipeline in
                try pipeline.addHandler(WebSocketFrameEncoder())
                try pipeline.addHandler(ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: 1 << 20)))
                try pipeline.addHandler(RecoveringSocketHandler(index: index, pattern: pattern, since: since, recorder: recorder,
                                                                ledger: ledger, ready: ready))
            }
            try channel.pipeline.syncOperations.addHandler(upgrade)
        }
    }
}

/// The socket of ``SocketClient/openRecovering(port:path:pattern:since:index:recorder:ledger:)``.
final class RecoveringSocketHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let index: Int
    let pattern: String
    let since: String?
    let recorder: Recorder
    let ledger: RecoveryLedger
    let ready: EventLoopPromise<Void>
    private var isReady = false

    init(index: Int, pattern: String, since: String?, recorder: Recorder, ledger: RecoveryLedger, ready: EventLoopPromise<Void>) {
        self.index = index
        self.pattern = pattern
        self.since = since
        self.recorder = recorder
        self.ledger = ledger
        self.ready = ready
    }

    func handlerAdded(context: ChannelHandlerContext) {
        var text = #"{"op":"sub","id":"s","pattern":"\#(pattern)","mode":"live""#
        if let since { text += #","since":"\#(since)""# }
        text += "}"
        let frame = WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: context.channel.allocator.buffer(string: text))
        context.writeAndFlush(wrapOutboundOut(frame), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            guard frame.fin else { return recorder.error("socket \(index): a fragmented frame") }
            handle(frame.data)
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !isReady { ready.fail(BenchError.closed("socket \(index) closed during set-up")) }
    }

    private func handle(_ data: ByteBuffer) {
        let now = BenchClock.now()
        data.withUnsafeReadableBytes { bytes in
            switch WarrenFrame.scan(bytes, wantID: true) {
            case .message(let stamp, let id):
                recorder.record(client: index, stamp: stamp, now: now)
                ledger.delivered(client: index, id: id, stamp: stamp, now: now)
            case .subscribed:
                let at = find(#""at":""#, in: bytes).flatMap { WarrenFrame.string(bytes, from: $0 + 6) }
                let recovered: Bool? = find(#""recovered":true"#, in: bytes) != nil ? true
                    : find(#""recovered":false"#, in: bytes) != nil ? false : nil
                let reason = find(#""reason":""#, in: bytes).flatMap { WarrenFrame.string(bytes, from: $0 + 10) }
                ledger.answered(client: index, at: at, resumed: since != nil, recovered: recovered, reason: reason, now: now)
                if !isReady {
                    isReady = true
                    ready.succeed(())
                }
            case .error(let text):
                if isReady { recorder.error(text) } else { ready.fail(BenchError.refused(text)) }
            case .puback, .other:
                break
            }
        }
    }
}
