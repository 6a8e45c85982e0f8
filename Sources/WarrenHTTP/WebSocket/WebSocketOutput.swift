import Atomics
import NIOCore
import NIOWebSocket
import WarrenCore

/// A session's outbound side on a WebSocket.
///
/// Frames are written straight into the socket's NIO channel (through a ``FrameOutbox``, so a
/// burst of deliveries costs one event-loop hop and one flush per socket, not one per frame).
/// Closing is the ``WebSocketConnectionHandler``'s (the close handshake). Two bounds on what
/// waits for a client: the channel's write-buffer high-water mark is the hard cap — above it
/// `send` refuses and the session closes the socket with 4008 at once — and `limit` is the soft
/// one: a socket found above it at each flush for longer than `grace` is refused (4008) too.
/// A client that keeps reading drains a burst without being closed; a stalled one costs at
/// most about the hard cap (plus one tick's frames).
final class WebSocketOutput: SessionOutput, @unchecked Sendable {
    let channel: any Channel
    var eventLoop: (any EventLoop)? { channel.eventLoop }
    private let limit: Int
    private let grace: TimeAmount
    /// Since when the socket has been over `limit` (at a flush); touched only on `channel.eventLoop`.
    private var overSince: NIODeadline?
    /// The socket stayed over `limit` past the grace: refuse from now on.
    private let overTooLong = ManagedAtomic(false)
    /// Set by the first close request; read on every send (an atomic load, not a lock).
    private let closing = ManagedAtomic(false)
    /// Starts the close handshake with a code and reason (from any thread, at most once).
    private let startClose: @Sendable (UInt16, String) -> Void
    /// Whether frames were written since the last flush; touched only on `channel.eventLoop`.
    private var needsFlush = false
    /// Writes encoded frames below the frame encoder once installed; touched only on
    /// `channel.eventLoop`.
    private var wire: WebSocketConnectionHandler?

    init(channel: any Channel, limit: Int, hardCap: Int, grace: TimeAmount, startClose: @escaping @Sendable (UInt16, String) -> Void) {
        self.channel = channel
        self.limit = limit
        self.grace = grace
        self.startClose = startClose
        let high = max(2, hardCap, limit)
        channel.setOption(ChannelOptions.writeBufferWaterMark, value: .init(low: max(1, high / 2), high: high)).whenFailure { _ in }
    }

    func send(_ frame: ByteBuffer) -> Bool {
        guard channel.isWritable, !closing.load(ordering: .relaxed), !overTooLong.load(ordering: .relaxed) else { return false }
        FrameOutbox.enqueue(frame, for: self)
        return true
    }

    /// The socket's handler, which writes frames as bytes at its place in the pipeline (below
    /// it only TLS, when configured). Set once, on the loop, before any frame is written.
    func use(_ writer: WebSocketConnectionHandler?) { wire = writer }

    /// The close frame went out: frames still on their way are dropped. On the loop.
    private var closeFrameSent = false

    /// Called by the connection handler once it wrote the close frame. On the loop.
    func closeFrameWritten() { closeFrameSent = true }

    /// Writes a frame without flushing; true when this is the first since the last flush.
    /// `encoded` is a whole WebSocket text frame. On `channel.eventLoop` only.
    func writeOnLoop(_ encoded: ByteBuffer) -> Bool {
        guard !closeFrameSent else { return false }
        if wire?.write(encoded) != true { channel.write(encoded, promise: nil) }
        defer { needsFlush = true }
        return !needsFlush
    }

    /// On `channel.eventLoop` only. After the flush (which writes what the kernel takes), checks
    /// what is left against the soft limit and its grace.
    func flushOnLoop() {
        needsFlush = false
        if let wire { wire.flush() } else { channel.flush() }
        let waiting = (try? channel.syncOptions?.getOption(ChannelOptions.bufferedWritableBytes)) ?? 0
        if waiting <= limit {
            overSince = nil
        } else if let since = overSince {
            if NIODeadline.now() - since >= grace { overTooLong.store(true, ordering: .relaxed) }
        } else {
            overSince = .now()
            if grace == .zero { overTooLong.store(true, ordering: .relaxed) }
        }
    }

    func close(code: UInt16, reason: String) {
        guard closing.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        startClose(code, reason)
    }
}
