/// Bridges deliveries from the event loop into an `AsyncThrowingStream`. The buffer is
/// unbounded in type but bounded in practice by the consumer's prefetch window.
final class StreamSink: AMQPDeliverySink {
    let stream: AsyncThrowingStream<AMQPMessage, Error>
    private let continuation: AsyncThrowingStream<AMQPMessage, Error>.Continuation

    init() {
        (stream, continuation) = AsyncThrowingStream<AMQPMessage, Error>.makeStream()
    }

    func deliver(_ message: AMQPMessage) { continuation.yield(message) }

    func finish(_ error: AMQPError?) {
        if let error { continuation.finish(throwing: error) } else { continuation.finish() }
    }
}
