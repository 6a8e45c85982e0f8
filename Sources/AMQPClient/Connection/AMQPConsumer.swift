/// A consumer's deliveries as an async sequence.
public struct AMQPConsumer: AsyncSequence, Sendable {
    public typealias Element = AMQPMessage
    /// The consumer tag, for ``AMQPChannel/cancel(consumerTag:)``.
    public let tag: String
    public let channel: AMQPChannel
    let stream: AsyncThrowingStream<AMQPMessage, Error>

    public func makeAsyncIterator() -> AsyncThrowingStream<AMQPMessage, Error>.AsyncIterator {
        stream.makeAsyncIterator()
    }
}
