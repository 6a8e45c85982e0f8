import Atomics
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket
import WarrenCore
import WSCore

/// A session's outbound side on a WebSocket.
///
/// Frames are written straight into the socket's NIO channel (through a ``FrameOutbox``, so a
/// burst of deliveries costs one event-loop hop and one flush per socket, not one per frame),
/// bypassing the async writer hummingbird-websocket hands the handler. The bound is the
/// channel's write-buffer high-water mark, set to `limit`: once more than that is waiting
/// for a client that does not read, `send` refuses and the session closes the socket with
/// 4008, so a stalled client costs at most about `limit` bytes (plus one tick's frames).
final class WebSocketOutput: SessionOutput, @unchecked Sendable {
    let channel: any Channel
    private let closeRequest = NIOLockedValueBox<(code: UInt16, reason: String)?>(nil)
    /// Set with the close request; read on every send (an atomic load, not a lock).
    private let closing = ManagedAtomic(false)
    private let closeSignal: AsyncStream<Void>
    private let closeContinuation: AsyncStream<Void>.Continuation
    /// Whether frames were written since the last flush; touched only on `channel.eventLoop`.
    private var needsFlush = false
    /// Writes encoded frames below the frame encoder once installed; touched only on
    /// `channel.eventLoop`.
    private var wire: WireFrameWriter?

    init(channel: any Channel, limit: Int) {
        self.channel = channel
        (closeSignal, closeContinuation) = AsyncStream<Void>.makeStream()
        channel.setOption(ChannelOptions.writeBufferWaterMark,
                          value: .init(low: max(1, limit / 2), high: max(2, limit))).whenFailure { _ in }
    }

    func send(_ frame: ByteBuffer) -> Bool {
        guard channel.isWritable, !closing.load(ordering: .relaxed) else { return false }
        FrameOutbox.enqueue(frame, for: self)
        return true
    }

    /// Puts a ``WireFrameWriter`` into the socket's pipeline, just above the WebSocket frame
    /// encoder, so frames encoded once per message go out without passing the pipeline. Until
    /// it is in place (or if the pipeline has no encoder) frames take the pipeline's path.
    func installWireWriter() async {
        try? await channel.eventLoop.submit { [self] in
            // Made on the loop it lives on (a handler is not Sendable).
            let writer = WireFrameWriter()
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(writer, position: .before(try pipeline.handler(type: WebSocketFrameEncoder.self)))
            wire = writer
        }.get()
    }

    /// Writes a frame without flushing; true when this is the first since the last flush.
    /// `encoded` is `payload` as a whole WebSocket text frame. On `channel.eventLoop` only.
    func writeOnLoop(payload: ByteBuffer, encoded: ByteBuffer) -> Bool {
        if wire?.write(encoded) != true {
            channel.write(WebSocketFrame(fin: true, opcode: .text, data: payload), promise: nil)
        }
        defer { needsFlush = true }
        return !needsFlush
    }

    /// On `channel.eventLoop` only.
    func flushOnLoop() {
        needsFlush = false
        if let wire { wire.flush() } else { channel.flush() }
    }

    func close(code: UInt16, reason: String) {
        let first = closeRequest.withLockedValue { request -> Bool in
            guard request == nil else { return false }
            request = (code, reason)
            return true
        }
        closing.store(true, ordering: .relaxed)
        if first { closeContinuation.finish() }
    }

    /// Waits until the session asks for a close, then sends the close frame with its code.
    func run(_ outbound: WebSocketOutboundWriter) async {
        for await _ in closeSignal {}
        if let (code, reason) = closeRequest.withLockedValue({ $0 }) {
            try? await outbound.close(code == 1000 ? .normalClosure : .unknown(code), reason: reason)
        }
    }

    /// Ends the writer without a close frame (the socket is already going).
    func finish() { closeContinuation.finish() }
}
