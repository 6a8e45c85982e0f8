import NIOConcurrencyHelpers
import NIOCore

/// A poll session's output: where its ``ClientSession`` puts deliveries, buffered for the next
/// poll instead of written to a socket, and where a long-poll parks until one arrives.
///
/// One poll waits at a time: a poll that arrives while another is parked answers the earlier
/// one at once (with what there is, possibly nothing) and waits in its place, as Nchan's
/// "last in" does for concurrent subscribers of one channel.
public final class PollOutput: SessionOutput {
    private struct State {
        var buffer: PollBuffer
        /// The parked poll: called once, outside the lock, when it is to be answered.
        var waiter: (id: UInt64, wake: @Sendable () -> Void)?
        /// When (Unix ms) the parked poll parked.
        var parkedAt: Int64 = 0
        var nextWaiter: UInt64 = 0
        var closed = false
        /// Its session's polls on this node (``PollSession``): kept under the same lock as the
        /// buffer, so that a poll's start and its answer take one lock each, not two.
        var activity: PollActivity
    }
    private let state: NIOLockedValueBox<State>
    /// Called (outside the lock) for each live delivery dropped because the buffer was full.
    let onDrop: @Sendable (PollItem) -> Void

    /// The loop of the connection whose request opened the session on this node, where its
    /// polls are usually answered: the live fan-out hands the session's deliveries to it, so its
    /// buffer, its parked poll and the answer are touched on one thread (nil: on the AMQP
    /// event loop).
    public let liveDeliveryLoop: (any EventLoop)?

    public init(maxLength: Int, home: (any EventLoop)? = nil, now: Int64 = WallClock.milliseconds(),
                onDrop: @escaping @Sendable (PollItem) -> Void = { _ in }) {
        self.state = NIOLockedValueBox(State(buffer: PollBuffer(maxLength: maxLength), activity: PollActivity(now: now)))
        self.liveDeliveryLoop = home
        self.onDrop = onDrop
    }

    // MARK: SessionOutput

    /// Answers to client frames have no reader on a poll session: its requests are answered
    /// over HTTP. Accepted and dropped.
    public func send(_ frame: ByteBuffer) -> Bool { true }

    public func deliver(_ frame: ByteBuffer, inboxID: String?) -> Bool {
        let item = PollItem(frame: frame, inboxID: inboxID)
        let (dropped, waiter) = state.withLockedValue { s in
            (s.buffer.add(item), Self.takeWaiter(&s))
        }
        if dropped { onDrop(item) }
        waiter?()
        return true
    }

    public func close(code: UInt16, reason: String) {
        let waiter = state.withLockedValue { s in
            s.closed = true
            return Self.takeWaiter(&s)
        }
        waiter?()
    }

    /// Removes the parked poll (if any); the caller wakes it outside the lock.
    private static func takeWaiter(_ s: inout State) -> (@Sendable () -> Void)? {
        guard let w = s.waiter else { return nil }
        s.waiter = nil
        return w.wake
    }

    // MARK: polls

    /// Waits until a delivery is buffered, ``wake()`` is called, another poll takes this one's
    /// place, or `timeout` passes (on `deadlines`, no task or timer per wait).
    public func wait(timeout: TimeAmount, deadlines: PollDeadlines) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            if park(timeout: timeout, deadlines: deadlines, wake: { c.resume() }) == nil { c.resume() }
        }
    }

    /// Parks a poll: `wake` is called once, from whichever thread answers it (a delivery, the
    /// deadline, a poll taking its place, a close, ``wake(parked:)``). Returns the parked poll's
    /// id; nil, and `wake` not kept, when there is something to answer already.
    public func park(timeout: TimeAmount, deadlines: PollDeadlines, wake: @escaping @Sendable () -> Void) -> UInt64? {
        let (parked, displaced) = state.withLockedValue { s -> (UInt64?, (@Sendable () -> Void)?) in
            if s.closed || !s.buffer.isEmpty { return (nil, nil) }
            let displaced = Self.takeWaiter(&s)
            s.nextWaiter += 1
            let id = s.nextWaiter
            s.waiter = (id, wake)
            s.parkedAt = WallClock.milliseconds()
            return (id, displaced)
        }
        displaced?()
        if let parked { deadlines.add(self, id: parked, after: timeout) }
        return parked
    }

    /// Answers the parked poll now (a drain).
    public func wake() { wake(only: nil) }

    /// Answers the poll parked as `id`, if it still is (its connection closed).
    public func wake(parked id: UInt64) { wake(only: id) }

    private func wake(only id: UInt64?) {
        let waiter = state.withLockedValue { s -> (@Sendable () -> Void)? in
            guard let w = s.waiter, id == nil || w.id == id else { return nil }
            return Self.takeWaiter(&s)
        }
        waiter?()
    }

    /// Answers the parked poll if it parked before `time` (Unix ms): its client polled another
    /// node then, one request at a time, so this one's connection is gone without a word, and
    /// left parked it would take the next delivery for nobody.
    public func wake(parkedBefore time: Int64) {
        let waiter = state.withLockedValue { s -> (@Sendable () -> Void)? in
            guard s.waiter != nil, s.parkedAt < time else { return nil }
            return Self.takeWaiter(&s)
        }
        waiter?()
    }

    /// Runs `body` on the buffer under the lock.
    public func withBuffer<T>(_ body: (inout PollBuffer) -> T) -> T {
        state.withLockedValue { body(&$0.buffer) }
    }

    /// Runs `body` on the buffer and the session's activity under the lock.
    func withBufferAndActivity<T>(_ body: (inout PollBuffer, inout PollActivity) -> T) -> T {
        state.withLockedValue { body(&$0.buffer, &$0.activity) }
    }

    /// Runs `body` on the session's activity under the lock.
    func withActivity<T>(_ body: (inout PollActivity) -> T) -> T {
        state.withLockedValue { body(&$0.activity) }
    }

    /// Whether a poll is parked here now.
    public var hasWaiter: Bool { state.withLockedValue { $0.waiter != nil } }
}
