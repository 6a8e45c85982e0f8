public struct ExchangeBind: Sendable, Hashable {
    public var destination: String
    public var source: String
    public var routingKey: String
    public var noWait: Bool
    public var arguments: FieldTable
    public init(destination: String, source: String, routingKey: String, noWait: Bool = false, arguments: FieldTable = [:]) {
        self.destination = destination
        self.source = source
        self.routingKey = routingKey
        self.noWait = noWait
        self.arguments = arguments
    }
}
