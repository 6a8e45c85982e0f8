public struct BasicReturn: Sendable, Hashable {
    public var replyCode: UInt16
    public var replyText: String
    public var exchange: String
    public var routingKey: String
    public init(replyCode: UInt16, replyText: String, exchange: String, routingKey: String) {
        self.replyCode = replyCode
        self.replyText = replyText
        self.exchange = exchange
        self.routingKey = routingKey
    }
}
