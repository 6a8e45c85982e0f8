/// `queue.bind` and `queue.unbind` (unbind has no no-wait bit on the wire).
public struct QueueBind: Sendable, Hashable {
    public var queue: String
    public var exchange: String
    public var routingKey: String
    public var noWait: Bool
    public var arguments: FieldTable
    public init(queue: String, exchange: String, routingKey: String, noWait: Bool = false, arguments: FieldTable = [:]) {
        self.queue = queue
        self.exchange = exchange
        self.routingKey = routingKey
        self.noWait = noWait
        self.arguments = arguments
    }
}
