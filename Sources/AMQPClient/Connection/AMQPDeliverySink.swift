/// Where a consumer's deliveries go.
///
/// Called on the connection's event loop, in delivery order, one message at a
/// time. ``AMQPConsumer`` implements it with an `AsyncThrowingStream`; a caller that
/// must not hop threads per message (a fan-out) can implement it directly.
public protocol AMQPDeliverySink: AnyObject, Sendable {
    func deliver(_ message: AMQPMessage)
    /// The consumer ended: nil after our own cancel, an error when the broker
    /// cancelled it or its channel or connection was closed for good.
    func finish(_ error: AMQPError?)
}
