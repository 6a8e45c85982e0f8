import NIOCore

/// One delivery waiting in a poll session's buffer: the same `msg` frame a WebSocket would
/// get (built once per message and shared), and the envelope id of an inbox delivery.
public struct PollItem: Sendable {
    /// `{"op":"msg","sub":…,"env":…}`.
    public let frame: ByteBuffer
    /// Set for inbox deliveries: leased under the answer's cursor, acked by it.
    public let inboxID: String?

    /// The length of the frame's bytes after `{"op":"msg",`: an answer's item is `{` followed
    /// by those bytes, so the frame is copied into the answer, not re-encoded.
    public var answerTailLength: Int { max(0, frame.readableBytes - ServerFrame.messagePrefix.utf8CodeUnitCount) }

    /// Appends the frame's bytes after `{"op":"msg",` to `buffer` (no slice made).
    public func writeAnswerTail(to buffer: inout ByteBuffer) {
        let skip = ServerFrame.messagePrefix.utf8CodeUnitCount
        frame.withUnsafeReadableBytes { bytes in
            if bytes.count > skip { buffer.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[skip...])) }
        }
    }
}
