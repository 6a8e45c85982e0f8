import NIOCore
import NIOWebSocket

/// Text frames to the event stream; pings answered; a close frame's code kept for the end. A
/// connection the `IdleStateHandler` before it finds silent is pinged, and closed when nothing
/// comes within `answerWithin` after.
final class WebSocketFrameHandler: ChannelInboundHandler {
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
