public struct BasicPublish: Sendable, Hashable {
    public var exchange: String
    public var routingKey: String
    public var mandatory: Bool
    public var immediate: Bool
    public init(exchange: String, routingKey: String, mandatory: Bool = false, immediate: Bool = false) {
        self.exchange = exchange
        self.routingKey = routingKey
        self.mandatory = mandatory
        self.immediate = immediate
    }
}
