import NIOCore

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
