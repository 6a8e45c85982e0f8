import NIOCore

/// Unmasked WebSocket frames (RFC 6455 §5.2), as a server sends them, built as bytes.
///
/// A delivery fanned out to many sockets is one message: its frame (header and payload) is
/// built once (``FrameOutbox``) and written as the same buffer to every socket. NIO's frame
/// encoder would build a header per socket, and take a handler's place in every socket's
/// pipeline; the server's frames are simple enough (final, unmasked, no extension) to write
/// here, the control frames too.
enum WebSocketWireFrame {
    static let text: UInt8 = 0x1
    static let close: UInt8 = 0x8
    static let ping: UInt8 = 0x9
    static let pong: UInt8 = 0xA

    /// One final frame of `opcode` holding `payload`.
    static func encode(_ payload: ByteBuffer, opcode: UInt8 = text) -> ByteBuffer {
        let length = payload.readableBytes
        var frame = ByteBuffer()
        frame.reserveCapacity(length + 10)
        frame.writeInteger(UInt8(0x80 | opcode))   // FIN and the opcode
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
