public struct BasicConsume: Sendable, Hashable {
    public var queue: String
    public var consumerTag: String
    public var noLocal: Bool
    public var noAck: Bool
    public var exclusive: Bool
    public var noWait: Bool
    public var arguments: FieldTable
    public init(queue: String, consumerTag: String = "", noLocal: Bool = false, noAck: Bool = false,
                exclusive: Bool = false, noWait: Bool = false, arguments: FieldTable = [:]) {
        self.queue = queue
        self.consumerTag = consumerTag
        self.noLocal = noLocal
        self.noAck = noAck
        self.exclusive = exclusive
        self.noWait = noWait
        self.arguments = arguments
    }
}
