import NIOCore

/// One delivery waiting in a poll session's buffer: the same `msg` frame a WebSocket would
/// get (built once per message and shared), and the envelope id of an inbox delivery.
public struct PollItem: Sendable {
    /// `{"op":"msg","sub":…,"env":…}`.
    public let frame: ByteBuffer
    /// Set for inbox deliveries: leased under the answer's cursor, acked by it.
    public let inboxID: String?

    /// The frame's bytes after `{"op":"msg",`: an answer's item is `{` followed by these, so
    /// the frame is sliced, not copied or re-encoded.
    public var answerTail: ByteBuffer {
        let skip = ServerFrame.messagePrefix.utf8CodeUnitCount
        return frame.getSlice(at: frame.readerIndex + skip, length: frame.readableBytes - skip) ?? ByteBuffer()
    }
}
