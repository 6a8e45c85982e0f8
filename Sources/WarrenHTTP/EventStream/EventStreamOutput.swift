import Atomics
import NIOCore
import NIOPosix
import WarrenCore

/// A session's outbound side on an event stream: each frame written as a Server-Sent Event
/// (``EventStreamEncoding``) on the stream's event loop, flushed once per loop tick.
///
/// Live deliveries are handed to the stream's own loop by the fan-out (``liveDeliveryLoop``),
/// one hand-off per message and loop; a message going to many streams on a loop is encoded
/// once (the same frame buffer arrives for each: the last one's event is kept). What waits for
/// the client is bounded by the channel's write-buffer high-water mark
/// (`limits.outbound_buffer_bytes`): past it a delivery is refused and the session closes the
/// stream (slow consumer) — an `EventSource` then reconnects with `Last-Event-ID` and recovers.
final class EventStreamOutput: SessionOutput, @unchecked Sendable {
    let channel: any Channel
    var eventLoop: (any EventLoop)? { channel.eventLoop }
    var liveDeliveryLoop: (any EventLoop)? { channel.eventLoop }
    private let closing = ManagedAtomic(false)
    /// A flush is scheduled for the end of this tick; on the loop only.
    private var flushScheduled = false

    init(channel: any Channel, maxBufferedBytes: Int) {
        self.channel = channel
        let high = max(2, maxBufferedBytes)
        channel.setOption(ChannelOptions.writeBufferWaterMark, value: .init(low: max(1, high / 2), high: high)).whenFailure { _ in }
    }

    func send(_ frame: ByteBuffer) -> Bool { write(EventStreamEncoding.event(frame)) }

    func deliver(_ frame: ByteBuffer, inboxID: String?) -> Bool {
        guard channel.isWritable, !closing.load(ordering: .relaxed) else { return false }
        return write(Self.cachedEvent(frame))
    }

    /// Writes an event's bytes; false when the stream is closing or too far behind.
    func write(_ event: ByteBuffer) -> Bool {
        guard channel.isWritable, !closing.load(ordering: .relaxed) else { return false }
        if channel.eventLoop.inEventLoop {
            writeOnLoop(event)
        } else {
            channel.eventLoop.execute { self.writeOnLoop(event) }
        }
        return true
    }

    private func writeOnLoop(_ event: ByteBuffer) {
        channel.write(event, promise: nil)
        guard !flushScheduled else { return }
        flushScheduled = true
        Self.flushes(on: channel.eventLoop).add(self)
    }

    // MARK: one flush task per loop and tick

    /// Streams written on one loop during a tick, flushed together at its end: a message fanned
    /// out to 500 streams costs one task, not 500. Touched only by the loop's thread.
    private final class PendingFlushes: @unchecked Sendable {
        let loop: any EventLoop
        var outputs: [EventStreamOutput] = []
        init(loop: any EventLoop) { self.loop = loop }

        func add(_ output: EventStreamOutput) {
            outputs.append(output)
            guard outputs.count == 1 else { return }
            loop.execute {
                let outputs = self.outputs
                self.outputs.removeAll(keepingCapacity: true)
                for output in outputs {
                    output.flushScheduled = false
                    output.channel.flush()
                }
            }
        }
    }

    private static let pendingFlushes = ThreadSpecificVariable<PendingFlushes>()

    /// The calling thread's batch; `loop` is the event loop running on it.
    private static func flushes(on loop: any EventLoop) -> PendingFlushes {
        if let existing = pendingFlushes.currentValue { return existing }
        let batch = PendingFlushes(loop: loop)
        pendingFlushes.currentValue = batch
        return batch
    }

    func close(code: UInt16, reason: String) {
        guard closing.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        let channel = channel
        channel.eventLoop.execute {
            // Said in the stream when there is room for it (a slow consumer's has none).
            if channel.isWritable {
                var w = JSONWriter()
                w.raw("{\"op\":\"closed\",\"code\":")
                w.int(Int64(code))
                w.raw(",\"reason\":")
                w.string(reason)
                w.raw("}")
                channel.write(EventStreamEncoding.event(ByteBuffer(bytes: w.bytes)), promise: nil)
            }
            channel.writeAndFlush(ByteBuffer(), promise: nil)
            channel.close(promise: nil)
        }
    }

    // MARK: one encoding per message and loop

    /// Touched only by the thread it belongs to.
    private final class LastEvent: @unchecked Sendable {
        var frame: ByteBuffer?
        var event = ByteBuffer()
    }

    private static let last = ThreadSpecificVariable<LastEvent>()

    /// `frame`'s event, encoded once for a run of deliveries of the same frame buffer on this
    /// thread. Same storage and bytes means the same message: the cache holds a reference to
    /// it, so its memory cannot have been reused for another.
    static func cachedEvent(_ frame: ByteBuffer) -> ByteBuffer {
        let cache: LastEvent
        if let existing = last.currentValue {
            cache = existing
        } else {
            cache = LastEvent()
            last.currentValue = cache
        }
        if let previous = cache.frame, previous.readableBytes == frame.readableBytes,
           previous.withUnsafeReadableBytes({ a in frame.withUnsafeReadableBytes { b in a.baseAddress == b.baseAddress } }) {
            return cache.event
        }
        cache.event = EventStreamEncoding.event(frame)
        cache.frame = frame
        return cache.event
    }
}
