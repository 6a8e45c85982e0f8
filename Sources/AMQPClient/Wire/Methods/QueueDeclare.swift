public struct QueueDeclare: Sendable, Hashable {
    public var queue: String
    public var passive: Bool
    public var durable: Bool
    public var exclusive: Bool
    public var autoDelete: Bool
    public var noWait: Bool
    public var arguments: FieldTable
    public init(queue: String, passive: Bool = false, durable: Bool = false, exclusive: Bool = false,
                autoDelete: Bool = false, noWait: Bool = false, arguments: FieldTable = [:]) {
        self.queue = queue
        self.passive = passive
        self.durable = durable
        self.exclusive = exclusive
        self.autoDelete = autoDelete
        self.noWait = noWait
        self.arguments = arguments
    }
}
