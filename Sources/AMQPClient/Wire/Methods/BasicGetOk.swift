public struct BasicGetOk: Sendable, Hashable {
    public var deliveryTag: UInt64
    public var redelivered: Bool
    public var exchange: String
    public var routingKey: String
    public var messageCount: UInt32
    public init(deliveryTag: UInt64, redelivered: Bool, exchange: String, routingKey: String, messageCount: UInt32) {
        self.deliveryTag = deliveryTag
        self.redelivered = redelivered
        self.exchange = exchange
        self.routingKey = routingKey
        self.messageCount = messageCount
    }
}
