import NIOCore
import Synchronization
import WarrenCore

/// A poller's connection as the place its polls are answered: the answer is written on the
/// connection's loop, from whichever thread took it (the broker connection's loop, a
/// deadline, another poll). Made at the connection's first poll and kept for the others; the
/// connection drops it when its I/O is done with it.
///
/// Not generic over the connection's I/O: a delivery reaches it through `any PollAnswerSink`,
/// and a generic class's witness is its unspecialized code. As a generic class the
/// whole answer (the response built, the write, the next request taken) ran unspecialized,
/// with generic metadata looked up and values copied through their witnesses on every answer.
/// The answer is a closure made where the I/O's type is known, so what it calls is the
/// specialized code (BENCHMARKS.md, "The broker's hop isolated").
final class PollConnectionSink: PollAnswerSink {
    private let loop: any EventLoop
    /// Writes the answer; on `loop` only.
    private let respond: @Sendable (PollAnswer) -> Void

    init<IO: HTTPConnectionIO>(_ connection: HTTPConnection<IO>) {
        loop = connection.io.loop
        alive = Atomic(connection.io.isActive)
        let bound = NIOLoopBound(connection, eventLoop: loop)
        respond = { bound.value.respond($0) }
    }

    /// Cleared when the connection goes (``gone()``). Asked of every parked poll a delivery
    /// answers, from the broker's thread: a flag of its own, where `channel.isActive` (through
    /// the channel's existential and its atomic's object) was 1.5 % of Warren's samples in the
    /// poll benchmark. Stored in the sink itself, not in an allocation of its own: the delivery
    /// that reads it goes on to the sink's other fields, and a flag elsewhere was one more cache
    /// line missed per answer (1.3 % of Warren's samples).
    private let alive: Atomic<Bool>

    var isAlive: Bool { alive.load(ordering: .relaxed) }

    /// The connection closed (on its loop).
    func gone() { alive.store(false, ordering: .relaxed) }

    func answer(_ taken: PollAnswer) {
        if loop.inEventLoop {
            respond(taken)
        } else {
            loop.execute { [respond] in respond(taken) }
        }
    }
}
