import Synchronization
import NIOCore

/// A poll session's output: where its ``ClientSession`` puts deliveries, buffered for the next
/// poll instead of written to a socket, and where a long-poll parks until one arrives.
///
/// One poll waits at a time: a poll that arrives while another is parked answers the earlier
/// one at once (with what there is, possibly nothing) and waits in its place, as Nchan's
/// "last in" does for concurrent subscribers of one channel.
public final class PollOutput: SessionOutput {
    /// What a parked poll does when it is to be answered.
    private enum Wake {
        /// Called once, outside the lock.
        case call(@Sendable () -> Void)
        /// Answered from here: under the lock that ends its wait, its answer is taken.
        case answer(PollRequest)
    }

    private struct State {
        var buffer: PollBuffer
        /// The parked poll.
        var waiter: (id: UInt64, wake: Wake)?
        /// When (Unix ms) the parked poll parked.
        var parkedAt: Int64 = 0
        var nextWaiter: UInt64 = 0
        var closed = false
        /// Its session's polls on this node (``PollSession``): kept under the same lock as the
        /// buffer, so that a poll's start and its answer take one lock each, not two.
        var activity: PollActivity
        /// The deadline wheel's turn at which the parked poll times out (``PollDeadlines``).
        var waiterDue: UInt64 = 0
        /// The earliest turn at which this output is in the wheel, if it is: a poll parking with
        /// a deadline no earlier leaves the wheel alone.
        var wheelDue: UInt64?
    }
    private let state: Mutex<State>
    /// Called (outside the lock) for each live delivery dropped because the buffer was full.
    let onDrop: @Sendable (PollItem) -> Void

    /// The loop of the connection whose request opened the session on this node, where its
    /// polls are usually answered: the live fan-out hands the session's deliveries to it, so its
    /// buffer, its parked poll and the answer are touched on one thread (nil: on the AMQP
    /// event loop).
    public let liveDeliveryLoop: (any EventLoop)?

    public init(maxLength: Int, home: (any EventLoop)? = nil, now: Int64 = WallClock.milliseconds(),
                onDrop: @escaping @Sendable (PollItem) -> Void = { _ in }) {
        self.state = Mutex(State(buffer: PollBuffer(maxLength: maxLength), activity: PollActivity(now: now)))
        self.liveDeliveryLoop = home
        self.onDrop = onDrop
    }

    // MARK: SessionOutput

    /// Answers to client frames have no reader on a poll session: its requests are answered
    /// over HTTP. Accepted and dropped.
    public func send(_ frame: ByteBuffer) -> Bool { true }

    public func deliver(_ frame: ByteBuffer, inboxID: String?) -> Bool {
        let item = PollItem(frame: frame, inboxID: inboxID)
        // A poll parked to be answered from here takes its answer under the same lock.
        let (dropped, woken) = state.withLock { s in
            (s.buffer.add(item), Self.takeWaiter(&s))
        }
        if dropped { onDrop(item) }
        woken?.run()
        return true
    }

    public func close(code: UInt16, reason: String) {
        let woken = state.withLock { s in
            s.closed = true
            return Self.takeWaiter(&s)
        }
        woken?.run()
    }

    /// A parked poll taken from its place, to be run outside the lock: a call, or an answer
    /// taken already and its sink.
    private enum Woken {
        case call(@Sendable () -> Void)
        case answered(any PollAnswerSink, PollAnswer)

        func run() {
            switch self {
            case .call(let wake): wake()
            case .answered(let sink, let answer): sink.answer(answer)
            }
        }
    }

    /// Removes the parked poll (if any), taking its answer if it is answered from here; the
    /// caller runs it outside the lock.
    private static func takeWaiter(_ s: inout State) -> Woken? {
        guard let w = s.waiter else { return nil }
        s.waiter = nil
        switch w.wake {
        case .call(let wake): return .call(wake)
        case .answer(let request): return .answered(request.sink, take(&s, request, now: WallClock.milliseconds()))
        }
    }

    /// The answer to `request` (its poll ends): up to its `max` buffered deliveries (none when
    /// its client went), their inbox ones leased under the answer's cursor.
    private static func take(_ s: inout State, _ request: PollRequest, now: Int64) -> PollAnswer {
        s.activity.end(now: now)
        return answer(&s.buffer, max: request.max, node: request.node, leaseMilliseconds: request.leaseMilliseconds, now: now,
                      none: !request.sink.isAlive)
    }

    /// An answer of up to `max` buffered deliveries (none: `none`), their inbox ones leased
    /// until `now + leaseMilliseconds` under the answer's cursor, and whether more were left.
    private static func answer(_ b: inout PollBuffer, max: Int, node: String, leaseMilliseconds: Int64, now: Int64, none: Bool) -> PollAnswer {
        let items = none ? [] : b.take(max: max, maxBytes: PollSettings.maxAnswerBytes)
        let seq = b.lease(items, now: now, duration: leaseMilliseconds)
        return PollAnswer(messages: items, node: node, sequence: seq, more: !b.isEmpty)
    }

    // MARK: polls

    /// Parks a poll: `wake` is called once, from whichever thread answers it (a delivery, the
    /// deadline, a poll taking its place, a close, ``wake(parked:)``). Returns the parked poll's
    /// id; nil, and `wake` not kept, when there is something to answer already.
    public func park(timeout: TimeAmount, deadlines: PollDeadlines, wake: @escaping @Sendable () -> Void) -> UInt64? {
        let (parked, displaced) = state.withLock { s -> (UInt64?, Woken?) in
            if s.closed || !s.buffer.isEmpty { return (nil, nil) }
            let (id, displaced) = Self.park(&s, .call(wake), now: WallClock.milliseconds())
            schedule(&s, due: deadlines.due(after: timeout), on: deadlines)
            return (id, displaced)
        }
        displaced?.run()
        return parked
    }

    /// How ``answerOrPark(_:timeout:deadlines:)`` took a poll.
    public enum Taken: Sendable {
        /// Answered now (its sink was not called: the caller answers).
        case answered(PollAnswer)
        /// Parked as this id: its sink is answered when a delivery, the deadline, a poll taking
        /// its place, a close or ``wake(parked:)`` ends it.
        case parked(UInt64)
    }

    /// A poll that has started (``PollSession/pollStarted()``): answered at once when there is
    /// something to answer (or nothing to wait for, `timeout` nil), else parked. Its answer,
    /// whenever it comes, is taken under the lock that ends its wait, and its poll ends there.
    public func answerOrPark(_ request: PollRequest, timeout: TimeAmount?, deadlines: PollDeadlines) -> Taken {
        let now = WallClock.milliseconds()
        let (taken, displaced) = state.withLock { s -> (Taken, Woken?) in
            guard let timeout, timeout > .zero, !s.closed, s.buffer.isEmpty else { return (.answered(Self.take(&s, request, now: now)), nil) }
            let (id, displaced) = Self.park(&s, .answer(request), now: now)
            schedule(&s, due: deadlines.due(after: timeout), on: deadlines)
            return (.parked(id), displaced)
        }
        displaced?.run()
        return taken
    }

    /// The parked poll times out at turn `due` of `deadlines` (the session's service's only
    /// wheel): this output goes in the wheel for it unless it is there for that turn or an
    /// earlier one already (under the lock; the wheel's lock is taken inside this one, never
    /// the other way round).
    private func schedule(_ s: inout State, due: UInt64, on deadlines: PollDeadlines) {
        s.waiterDue = due
        if let inWheel = s.wheelDue, inWheel <= due { return }
        s.wheelDue = deadlines.add(self, due: due)
    }

    /// The wheel's turn `turn` has come for this output: its parked poll is answered if its
    /// deadline has come, else the output goes back in the wheel for that deadline.
    func expire(at turn: UInt64, deadlines: PollDeadlines) {
        let woken = state.withLock { s -> Woken? in
            if let inWheel = s.wheelDue, inWheel <= turn { s.wheelDue = nil }
            guard s.waiter != nil else { return nil }
            if s.waiterDue <= turn { return Self.takeWaiter(&s) }
            schedule(&s, due: s.waiterDue, on: deadlines)
            return nil
        }
        woken?.run()
    }

    /// Parks `wake` in the place of the poll parked before (returned, to be run outside the lock).
    private static func park(_ s: inout State, _ wake: Wake, now: Int64) -> (UInt64, Woken?) {
        let displaced = takeWaiter(&s)
        s.nextWaiter += 1
        s.waiter = (s.nextWaiter, wake)
        s.parkedAt = now
        return (s.nextWaiter, displaced)
    }

    /// Answers the parked poll now (a drain).
    public func wake() { wake(only: nil) }

    /// Answers the poll parked as `id`, if it still is (its connection closed).
    public func wake(parked id: UInt64) { wake(only: id) }

    private func wake(only id: UInt64?) {
        let woken = state.withLock { s -> Woken? in
            guard let w = s.waiter, id == nil || w.id == id else { return nil }
            return Self.takeWaiter(&s)
        }
        woken?.run()
    }

    /// Answers the parked poll if it parked before `time` (Unix ms): its client polled another
    /// node then, one request at a time, so this one's connection is gone without a word, and
    /// left parked it would take the next delivery for nobody.
    public func wake(parkedBefore time: Int64) {
        let woken = state.withLock { s -> Woken? in
            guard s.waiter != nil, s.parkedAt < time else { return nil }
            return Self.takeWaiter(&s)
        }
        woken?.run()
    }

    /// Runs `body` on the buffer under the lock.
    public func withBuffer<T>(_ body: (inout PollBuffer) -> T) -> T {
        state.withLock { body(&$0.buffer) }
    }

    /// Runs `body` on the session's activity under the lock.
    func withActivity<T>(_ body: (inout PollActivity) -> T) -> T {
        state.withLock { body(&$0.activity) }
    }

    /// Whether a poll is parked here now.
    public var hasWaiter: Bool { state.withLock { $0.waiter != nil } }
}
