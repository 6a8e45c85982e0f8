public struct BasicDeliver: Sendable, Hashable {
    public var consumerTag: String
    public var deliveryTag: UInt64
    public var redelivered: Bool
    public var exchange: String
    public var routingKey: String
    public init(consumerTag: String, deliveryTag: UInt64, redelivered: Bool, exchange: String, routingKey: String) {
        self.consumerTag = consumerTag
        self.deliveryTag = deliveryTag
        self.redelivered = redelivered
        self.exchange = exchange
        self.routingKey = routingKey
    }
}
