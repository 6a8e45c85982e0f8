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
final class FrameOutbox: @unchecked Sendable {
    private static let perThread = ThreadSpecificVariable<FrameOutbox>()

    private let loop: any EventLoop
    /// Sockets on this loop written during this tick, to flush at its end.
    private var toFlush: [WebSocketOutput] = []
    /// Frames for sockets on other loops, per loop, in the order they were sent.
    private var remote: [(loop: any EventLoop, frames: [(WebSocketOutput, ByteBuffer)])] = []
    private var scheduled = false

    private init(loop: any EventLoop) { self.loop = loop }

    /// Queues `frame` for `output`'s socket. Frames from one thread reach a socket in the order
    /// they were enqueued. Off an event loop (a task), the frame is written and flushed at once.
    static func enqueue(_ frame: ByteBuffer, for output: WebSocketOutput) {
        guard let current = MultiThreadedEventLoopGroup.currentEventLoop else {
            output.channel.eventLoop.execute {
                _ = output.writeOnLoop(frame)
                output.flushOnLoop()
            }
            return
        }
        let outbox: FrameOutbox
        if let existing = perThread.currentValue {
            outbox = existing
        } else {
            outbox = FrameOutbox(loop: current)
            perThread.currentValue = outbox
        }
        outbox.add(frame, for: output)
    }

    private func add(_ frame: ByteBuffer, for output: WebSocketOutput) {
        let target = output.channel.eventLoop
        if target === loop {
            if output.writeOnLoop(frame) { toFlush.append(output) }
        } else if let i = remote.firstIndex(where: { $0.loop === target }) {
            remote[i].frames.append((output, frame))
        } else {
            remote.append((target, [(output, frame)]))
        }
        if !scheduled {
            scheduled = true
            loop.execute { self.ship() }
        }
    }

    private func ship() {
        scheduled = false
        let flush = toFlush
        toFlush.removeAll(keepingCapacity: true)
        for output in flush { output.flushOnLoop() }
        let batches = remote
        remote.removeAll(keepingCapacity: true)
        for batch in batches {
            let frames = batch.frames
            batch.loop.execute {
                var written: [WebSocketOutput] = []
                for (output, frame) in frames where output.writeOnLoop(frame) { written.append(output) }
                for output in written { output.flushOnLoop() }
            }
        }
    }
}
