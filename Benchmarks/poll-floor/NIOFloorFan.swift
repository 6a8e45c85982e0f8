import AMQPClient
import NIOCore

/// Hands each message, built once, to every event loop of the NIO floor server with one
/// `execute` per loop; the loop answers its parked polls.
final class NIOFloorFan: AMQPDeliverySink, @unchecked Sendable {
    private let loops: [(loop: any EventLoop, sessions: FloorLoopSessions)]
    /// Touched only on the AMQP connection's event loop.
    private var sequence = 0

    init(_ loops: [(loop: any EventLoop, sessions: FloorLoopSessions)]) { self.loops = loops }

    func deliver(_ message: AMQPMessage) {
        sequence += 1
        let built = FloorMessage(message, sequence: sequence)
        let shared = ByteBuffer(bytes: built.response)
        for (loop, sessions) in loops {
            loop.execute {
                for handler in sessions.handlers { handler.deliver(built, shared) }
            }
        }
    }

    func finish(_ error: AMQPError?) { FloorExit.consumerEnded(error) }
}
