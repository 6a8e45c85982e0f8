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

    private var exchanges = InsertionOrderedDictionary<String, Exchange>()
    private var queues = InsertionOrderedDictionary<String, Queue>()
    private var recordedBindings = InsertionOrderedDictionary<Binding, Void>()
    private var consumers = InsertionOrderedDictionary<String, Consumer>()

    public init() {}

    public mutating func recordExchange(_ declare: ExchangeDeclare) {
        guard !declare.passive else { return }
        var d = declare
        d.noWait = false
        exchanges[declare.exchange] = Exchange(declare: d)
    }

    public mutating func deleteExchange(_ name: String) {
        exchanges[name] = nil
        recordedBindings.removeAll { b, _ in b.exchange == name }
    }

    public mutating func recordQueue(_ declare: QueueDeclare, name: String) {
        guard !declare.passive else { return }
        var d = declare
        d.noWait = false
        queues[name] = Queue(declare: d, serverNamed: declare.queue.isEmpty, name: name)
    }

    public mutating func deleteQueue(_ name: String) {
        queues[name] = nil
        recordedBindings.removeAll { b, _ in b.queue == name }
    }

    public mutating func recordBinding(queue: String, exchange: String, routingKey: String, arguments: FieldTable) {
        recordedBindings[Binding(queue: queue, exchange: exchange, routingKey: routingKey, arguments: arguments)] = ()
    }

    public mutating func deleteBinding(queue: String, exchange: String, routingKey: String, arguments: FieldTable) {
        recordedBindings[Binding(queue: queue, exchange: exchange, routingKey: routingKey, arguments: arguments)] = nil
    }

    public mutating func recordConsumer(_ consumer: Consumer) {
        consumers[consumer.consume.consumerTag] = consumer
    }

    @discardableResult
    public mutating func deleteConsumer(_ tag: String) -> Consumer? {
        consumers.removeValue(forKey: tag)
    }

    public func hasConsumer(_ tag: String) -> Bool {
        consumers[tag] != nil
    }

    /// Removes and returns every consumer on `channel` (the channel is gone for good).
    public mutating func deleteConsumers(onChannel channel: UInt16) -> [Consumer] {
        let gone = consumers.ordered.filter { $0.value.channel == channel }
        for c in gone { consumers.removeValue(forKey: c.key) }
        return gone.map(\.value)
    }

    /// A server-named queue came back under a new name: follow it everywhere.
    public mutating func renameQueue(_ old: String, to new: String) {
        guard old != new, var q = queues[old] else { return }
        q.name = new
        queues.rename(old, to: new)
        queues[new] = q
        for b in recordedBindings.ordered where b.key.queue == old {
            var renamed = b.key
            renamed.queue = new
            recordedBindings.rename(b.key, to: renamed)
        }
        consumers.updateValues { _, c in if c.consume.queue == old { c.consume.queue = new } }
    }

    public var orderedExchanges: [Exchange] { exchanges.ordered.map(\.value) }
    public var orderedQueues: [Queue] { queues.ordered.map(\.value) }
    /// The bindings, in the order they were first recorded.
    public var bindings: [Binding] { recordedBindings.ordered.map(\.key) }
    public var orderedConsumers: [Consumer] { consumers.ordered.map(\.value) }
}
