import NIOCore

/// Identifies a delivery for ack / nack / reject.
///
/// Delivery tags are only meaningful on the connection that produced them. The
/// `epoch` counts connections: after a recovery, acking a tag from an earlier
/// epoch is a no-op instead of a channel error (406 unknown delivery tag).
public struct DeliveryTag: Sendable, Hashable, CustomStringConvertible {
    public let epoch: UInt64
    public let value: UInt64
    public init(epoch: UInt64, value: UInt64) {
        self.epoch = epoch
        self.value = value
    }
    public var description: String { "\(epoch):\(value)" }
}

/// A message delivered by `basic.deliver` or `basic.get-ok`.
public struct AMQPMessage: Sendable {
    public var body: ByteBuffer
    public var properties: BasicProperties
    public var exchange: String
    public var routingKey: String
    public var redelivered: Bool
    public var deliveryTag: DeliveryTag
    /// The consumer it was delivered to; nil for `basic.get`.
    public var consumerTag: String?
    /// For `basic.get`: messages left in the queue.
    public var messageCount: UInt32?

    public init(body: ByteBuffer, properties: BasicProperties, exchange: String, routingKey: String,
                redelivered: Bool, deliveryTag: DeliveryTag, consumerTag: String? = nil, messageCount: UInt32? = nil) {
        self.body = body
        self.properties = properties
        self.exchange = exchange
        self.routingKey = routingKey
        self.redelivered = redelivered
        self.deliveryTag = deliveryTag
        self.consumerTag = consumerTag
        self.messageCount = messageCount
    }
}

/// A mandatory publish the broker could not route, handed back by `basic.return`.
public struct AMQPReturnedMessage: Sendable {
    public var replyCode: UInt16
    public var replyText: String
    public var exchange: String
    public var routingKey: String
    public var properties: BasicProperties
    public var body: ByteBuffer
}

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
