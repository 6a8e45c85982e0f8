#if os(Linux)
import AMQPClient

/// Hands each message, built once, to every ``EpollWorker``.
final class EpollFan: AMQPDeliverySink, @unchecked Sendable {
    private let workers: [EpollWorker]
    /// Touched only on the AMQP connection's event loop.
    private var sequence = 0

    init(_ workers: [EpollWorker]) { self.workers = workers }

    func deliver(_ message: AMQPMessage) {
        sequence += 1
        let built = FloorMessage(message, sequence: sequence)
        for worker in workers { worker.post(built) }
    }

    func finish(_ error: AMQPError?) { FloorExit.consumerEnded(error) }
}
#endif
