import NIOCore

/// Writes finished WebSocket frames straight towards the socket, below the frame encoder.
///
/// A delivery fanned out to many sockets is one message: its frame bytes (header and payload,
/// unmasked as a server sends them) are built once (``WebSocketTextFrame``) and written as the
/// same buffer to every socket. Writing a `WebSocketFrame` at the pipeline's tail instead
/// would walk every handler and have the encoder build a header, per socket. Sitting just
/// above the frame encoder's position, it still writes through TLS when the server has it.
/// Everything else the pipeline writes passes through untouched.
final class WireFrameWriter: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// Writes an encoded frame; false once the handler left the pipeline. On the channel's loop.
    func write(_ frame: ByteBuffer) -> Bool {
        guard let context else { return false }
        context.write(wrapOutboundOut(frame), promise: nil)
        return true
    }

    /// Flushes what reached this point. On the channel's loop.
    func flush() { context?.flush() }
}

/// Unmasked WebSocket text frames (RFC 6455 §5.2), as a server sends them.
enum WebSocketTextFrame {
    /// One final text frame holding `payload`.
    static func encode(_ payload: ByteBuffer) -> ByteBuffer {
        let length = payload.readableBytes
        var frame = ByteBuffer()
        frame.reserveCapacity(length + 10)
        frame.writeInteger(UInt8(0x81))   // FIN, opcode 1 (text)
        if length < 126 {
            frame.writeInteger(UInt8(length))
        } else if length <= Int(UInt16.max) {
            frame.writeInteger(UInt8(126))
            frame.writeInteger(UInt16(length))
        } else {
            frame.writeInteger(UInt8(127))
            frame.writeInteger(UInt64(length))
        }
        frame.writeImmutableBuffer(payload)
        return frame
    }
}
