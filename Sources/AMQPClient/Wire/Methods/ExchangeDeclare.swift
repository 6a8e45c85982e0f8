public struct ExchangeDeclare: Sendable, Hashable {
    public var exchange: String
    public var type: String
    public var passive: Bool
    public var durable: Bool
    public var autoDelete: Bool
    public var `internal`: Bool
    public var noWait: Bool
    public var arguments: FieldTable
    public init(exchange: String, type: String = "topic", passive: Bool = false, durable: Bool = true,
                autoDelete: Bool = false, internal: Bool = false, noWait: Bool = false, arguments: FieldTable = [:]) {
        self.exchange = exchange
        self.type = type
        self.passive = passive
        self.durable = durable
        self.autoDelete = autoDelete
        self.internal = `internal`
        self.noWait = noWait
        self.arguments = arguments
    }
}
