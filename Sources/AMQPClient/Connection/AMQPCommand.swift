import NIOCore

/// A request from the async API to the connection's event loop, written into the pipeline.
enum AMQPCommand: Sendable {
    case openChannel(UInt16, EventLoopPromise<RPCResponse>)
    case request(channel: UInt16, AMQPMethod, sink: AMQPDeliverySink?, EventLoopPromise<RPCResponse>)
    case publish(channel: UInt16, BasicPublish, BasicProperties, ByteBuffer, EventLoopPromise<Void>)
    /// Asynchronous methods (ack, nack, reject): no answer expected.
    case send(channel: UInt16, AMQPMethod)
    case closeChannel(UInt16, EventLoopPromise<RPCResponse>)
    case close(EventLoopPromise<Void>)
    /// Commands gathered on another thread during one tick (a batch of acks), taken in order in
    /// one pass through the pipeline instead of one each.
    case batch([AMQPCommand])
}
