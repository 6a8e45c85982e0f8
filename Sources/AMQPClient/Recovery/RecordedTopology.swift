/// What this client declared, remembered so that it can be declared again after a reconnect.
///
/// A value type: the connection keeps it under its lock and replays it in
/// order (exchanges, queues, bindings, consumers) on a new link.
public struct RecordedTopology: Sendable {
    public struct Exchange: Sendable, Hashable {
        public var declare: ExchangeDeclare
    }

    public struct Queue: Sendable, Hashable {
        public var declare: QueueDeclare
        /// Named by the broker: a new name is taken at recovery and bindings and consumers follow it.
        public var serverNamed: Bool
        public var name: String
    }

    public struct Binding: Sendable, Hashable {
        public var queue: String
        public var exchange: String
        public var routingKey: String
        public var arguments: FieldTable
    }

    public struct Consumer: Sendable {
        public var channel: UInt16
        public var consume: BasicConsume
        public var sink: AMQPDeliverySink
    }

    public private(set) var exchanges: [String: Exchange] = [:]
    public private(set) var exchangeOrder: [String] = []
    public private(set) var queues: [String: Queue] = [:]
    public private(set) var queueOrder: [String] = []
    public private(set) var bindings: [Binding] = []
    public private(set) var consumers: [String: Consumer] = [:]
    public private(set) var consumerOrder: [String] = []

    public init() {}

    public mutating func recordExchange(_ declare: ExchangeDeclare) {
        guard !declare.passive else { return }
        if exchanges[declare.exchange] == nil { exchangeOrder.append(declare.exchange) }
        var d = declare
        d.noWait = false
        exchanges[declare.exchange] = Exchange(declare: d)
    }

    public mutating func deleteExchange(_ name: String) {
        exchanges[name] = nil
        exchangeOrder.removeAll { $0 == name }
        bindings.removeAll { $0.exchange == name }
    }

    public mutating func recordQueue(_ declare: QueueDeclare, name: String) {
        guard !declare.passive else { return }
        if queues[name] == nil { queueOrder.append(name) }
        var d = declare
        d.noWait = false
        queues[name] = Queue(declare: d, serverNamed: declare.queue.isEmpty, name: name)
    }

    public mutating func deleteQueue(_ name: String) {
        queues[name] = nil
        queueOrder.removeAll { $0 == name }
        bindings.removeAll { $0.queue == name }
    }

    public mutating func recordBinding(queue: String, exchange: String, routingKey: String, arguments: FieldTable) {
        let b = Binding(queue: queue, exchange: exchange, routingKey: routingKey, arguments: arguments)
        if !bindings.contains(b) { bindings.append(b) }
    }

    public mutating func deleteBinding(queue: String, exchange: String, routingKey: String, arguments: FieldTable) {
        bindings.removeAll { $0 == Binding(queue: queue, exchange: exchange, routingKey: routingKey, arguments: arguments) }
    }

    public mutating func recordConsumer(_ consumer: Consumer) {
        let tag = consumer.consume.consumerTag
        if consumers[tag] == nil { consumerOrder.append(tag) }
        consumers[tag] = consumer
    }

    @discardableResult
    public mutating func deleteConsumer(_ tag: String) -> Consumer? {
        guard let c = consumers.removeValue(forKey: tag) else { return nil }
        consumerOrder.removeAll { $0 == tag }
        return c
    }

    /// Removes and returns every consumer on `channel` (the channel is gone for good).
    public mutating func deleteConsumers(onChannel channel: UInt16) -> [Consumer] {
        let tags = consumerOrder.filter { consumers[$0]?.channel == channel }
        return tags.compactMap { deleteConsumer($0) }
    }

    /// A server-named queue came back under a new name: follow it everywhere.
    public mutating func renameQueue(_ old: String, to new: String) {
        guard old != new, var q = queues.removeValue(forKey: old) else { return }
        q.name = new
        queues[new] = q
        queueOrder = queueOrder.map { $0 == old ? new : $0 }
        for i in bindings.indices where bindings[i].queue == old { bindings[i].queue = new }
        for tag in consumerOrder where consumers[tag]?.consume.queue == old { consumers[tag]!.consume.queue = new }
    }

    public var orderedExchanges: [Exchange] { exchangeOrder.compactMap { exchanges[$0] } }
    public var orderedQueues: [Queue] { queueOrder.compactMap { queues[$0] } }
    public var orderedConsumers: [Consumer] { consumerOrder.compactMap { consumers[$0] } }
}
