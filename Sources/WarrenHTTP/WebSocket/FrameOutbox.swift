import NIOCore
import NIOPosix

/// Frames bound for WebSockets, gathered on one event-loop thread during one tick and shipped
/// at the end of it: one `execute` per destination event loop and one flush per socket per
/// tick, however many frames the tick produced.
///
/// The fan-out runs on the AMQP connection's event loop: a delivery read from the broker is
/// matched and handed to every subscribed session there. Writing each frame to its socket
/// would cost a cross-thread hop (for sockets on the other loops) and a `writev` per frame;
/// here a burst of deliveries read in one go becomes one hop per loop and one `writev` per
/// socket. Each outbox belongs to one thread and is touched only there, so it takes no lock.
///
/// A message fanned out to many sockets arrives here as the same payload buffer once per
/// socket, one after another: it is encoded as a WebSocket frame on the first and the same
/// frame bytes go to every socket (``WebSocketWireFrame``).
final class FrameOutbox: @unchecked Sendable {
    private static let perThread = ThreadSpecificVariable<FrameOutbox>()

    private let loop: any EventLoop
    /// Sockets on this loop written during this tick, to flush at its end.
    private var toFlush: [WebSocketOutput] = []
    /// Frames for sockets on other loops, per loop, in the order they were sent.
    private var remote: [(loop: any EventLoop, frames: [Outgoing])] = []
    private var scheduled = false
    /// The last payload encoded, and its frame (see ``encode(_:)``).
    private var lastPayload: ByteBuffer?
    private var lastFrame = ByteBuffer()

    /// A frame on its way to one socket.
    struct Outgoing {
        let output: WebSocketOutput
        let frame: ByteBuffer

        /// On the output's loop; true when the socket needs a flush.
        func write() -> Bool { output.writeOnLoop(frame) }
    }

    private init(loop: any EventLoop) { self.loop = loop }

    /// Queues a text frame holding `payload` for `output`'s socket. Frames from one thread reach
    /// a socket in the order they were enqueued. Off an event loop (a task), the frame is
    /// written and flushed at once.
    static func enqueue(_ payload: ByteBuffer, for output: WebSocketOutput) {
        guard let current = MultiThreadedEventLoopGroup.currentEventLoop else {
            let frame = WebSocketWireFrame.encode(payload)
            output.channel.eventLoop.execute {
                _ = output.writeOnLoop(frame)
                output.flushOnLoop()
            }
            return
        }
        let outbox = Self.outbox(on: current)
        outbox.add(Outgoing(output: output, frame: outbox.encode(payload)))
    }

    /// The calling thread's outbox; `loop` is the event loop running on it.
    private static func outbox(on loop: any EventLoop) -> FrameOutbox {
        if let existing = perThread.currentValue { return existing }
        let outbox = FrameOutbox(loop: loop)
        perThread.currentValue = outbox
        return outbox
    }

    /// `payload` as a WebSocket text frame, built once for a run of sends of the same buffer.
    /// Same storage and bytes as the last payload means the same message: the cache holds a
    /// reference to it, so its memory cannot have been reused for another.
    private func encode(_ payload: ByteBuffer) -> ByteBuffer {
        if let last = lastPayload, last.readableBytes == payload.readableBytes,
           last.withUnsafeReadableBytes({ a in payload.withUnsafeReadableBytes { b in a.baseAddress == b.baseAddress } }) {
            return lastFrame
        }
        lastFrame = WebSocketWireFrame.encode(payload)
        lastPayload = payload
        return lastFrame
    }

    private func add(_ outgoing: Outgoing) {
        let target = outgoing.output.channel.eventLoop
        if target === loop {
            if outgoing.write() { toFlush.append(outgoing.output) }
        } else if let i = remote.firstIndex(where: { $0.loop === target }) {
            remote[i].frames.append(outgoing)
        } else {
            remote.append((target, [outgoing]))
        }
        scheduleShip()
    }

    private func scheduleShip() {
        if !scheduled {
            scheduled = true
            loop.execute { self.ship() }
        }
    }

    private func ship() {
        scheduled = false
        // The other loops' batches go first: their threads write while this one flushes its
        // own sockets (a `write` system call each), instead of waiting for all of them.
        let batches = remote
        remote.removeAll(keepingCapacity: true)
        for batch in batches {
            let frames = batch.frames
            let target = batch.loop
            target.execute {
                // Flushed by the destination thread's own outbox once the tasks already queued
                // there ran: a socket loop that fell behind and finds several batches waiting
                // writes each socket once for all of them.
                let outbox = FrameOutbox.outbox(on: target)
                for outgoing in frames where outgoing.write() { outbox.toFlush.append(outgoing.output) }
                outbox.scheduleShip()
            }
        }
        let flush = toFlush
        toFlush.removeAll(keepingCapacity: true)
        for output in flush { output.flushOnLoop() }
    }
}
