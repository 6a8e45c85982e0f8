import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// Closes a connection whose first request head has not fully arrived within `timeout`
/// (slowloris: a client trickling header bytes to hold a connection forever). It watches the
/// raw bytes for the blank line ending the head, then takes itself out of the pipeline; what
/// follows (a body, a WebSocket, keep-alive requests) is governed by the other timeouts.
final class RequestHeadTimeoutHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?
    /// The last bytes seen, so a "\r\n\r\n" split across reads is found.
    private var tail: [UInt8] = []

    init(timeout: TimeAmount) { self.timeout = timeout }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: timeout) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) { timer?.cancel() }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        let complete = Self.endsHead(tail: &tail, buffer.readableBytesView)
        context.fireChannelRead(data)
        if complete {
            timer?.cancel()
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    /// Whether `bytes`, after the kept `tail`, contain CR LF CR LF; keeps the last three bytes.
    static func endsHead(tail: inout [UInt8], _ bytes: ByteBufferView) -> Bool {
        let pattern: [UInt8] = [13, 10, 13, 10]
        var window = tail
        for b in bytes {
            window.append(b)
            if window.count > 4 { window.removeFirst() }
            if window == pattern { return true }
        }
        tail = window.suffix(3)
        return false
    }
}
