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
        var waiter: (id: UInt64, continuation: CheckedContinuation<Void, Never>)?
        /// The parked poll's deadline timer: cancelled when the poll is answered sooner (an
        /// uncancelled timer per answer would pile up in the event loop's timer heap).
        var timer: Scheduled<Void>?
        var nextWaiter: UInt64 = 0
        var closed = false
    }
    private let state: NIOLockedValueBox<State>
    /// Called (outside the lock) for each live delivery dropped because the buffer was full.
    let onDrop: @Sendable (PollItem) -> Void

    public init(maxLength: Int, onDrop: @escaping @Sendable (PollItem) -> Void = { _ in }) {
        self.state = NIOLockedValueBox(State(buffer: PollBuffer(maxLength: maxLength)))
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
        waiter?.resume()
        return true
    }

    public func close(code: UInt16, reason: String) {
        let waiter = state.withLockedValue { s in
            s.closed = true
            return Self.takeWaiter(&s)
        }
        waiter?.resume()
    }

    /// Removes the parked poll (if any) and its timer; the caller resumes it outside the lock.
    private static func takeWaiter(_ s: inout State) -> CheckedContinuation<Void, Never>? {
        guard let w = s.waiter else { return nil }
        s.waiter = nil
        s.timer?.cancel()
        s.timer = nil
        return w.continuation
    }

    // MARK: polls

    /// Waits until a delivery is buffered, ``wake()`` is called, another poll takes this one's
    /// place, or `timeout` passes (a timer on `loop`, no task per wait).
    public func wait(timeout: TimeAmount, on loop: any EventLoop) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = state.withLockedValue { s -> Bool in
                if s.closed || !s.buffer.isEmpty { return true }
                let displaced = Self.takeWaiter(&s)
                s.nextWaiter += 1
                let id = s.nextWaiter
                s.waiter = (id, c)
                s.timer = loop.scheduleTask(in: timeout) { [weak self] in self?.wake(only: id) }
                // Resumed outside the lock would be tidier, but a continuation's resume only
                // enqueues its task: it runs nothing here.
                displaced?.resume()
                return false
            }
            if now { c.resume() }
        }
    }

    /// Answers the parked poll now (a drain).
    public func wake() { wake(only: nil) }

    private func wake(only id: UInt64?) {
        let waiter = state.withLockedValue { s -> CheckedContinuation<Void, Never>? in
            guard let w = s.waiter, id == nil || w.id == id else { return nil }
            return Self.takeWaiter(&s)
        }
        waiter?.resume()
    }

    /// Runs `body` on the buffer under the lock.
    public func withBuffer<T>(_ body: (inout PollBuffer) -> T) -> T {
        state.withLockedValue { body(&$0.buffer) }
    }

    /// Whether a poll is parked here now.
    public var hasWaiter: Bool { state.withLockedValue { $0.waiter != nil } }
}
