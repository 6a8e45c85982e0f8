import AMQPClient
import NIOCore

/// What the bridge asks of one AMQP channel: the seam between the bridge logic (sessions,
/// the live hub, inboxes, the publisher) and the AMQP client, so that logic is unit-tested
/// event by event with a fake channel and no broker. ``AMQPChannel`` is the real one.
public protocol BrokerChannel: AnyObject, Sendable {
    /// Why the channel is closed, or nil while it is usable.
    var closeReason: AMQPError? { get }

    func exchangeDeclare(_ name: String, type: String, durable: Bool, autoDelete: Bool, internal: Bool, passive: Bool,
                         arguments: FieldTable) async throws
    @discardableResult
    func queueDeclare(_ name: String, durable: Bool, exclusive: Bool, autoDelete: Bool, passive: Bool, arguments: FieldTable,
                      recordForRecovery: Bool) async throws -> QueueDeclareOk
    func queueBind(queue: String, exchange: String, routingKey: String, arguments: FieldTable, recordForRecovery: Bool) async throws
    func queueUnbind(queue: String, exchange: String, routingKey: String, arguments: FieldTable) async throws
    @discardableResult
    func queueDelete(_ name: String, ifUnused: Bool, ifEmpty: Bool) async throws -> UInt32

    /// Starts a consumer whose deliveries go to `sink` on the connection's event loop; returns its tag.
    @discardableResult
    func consume(queue: String, consumerTag: String?, noAck: Bool, exclusive: Bool, arguments: FieldTable,
                 sink: AMQPDeliverySink) async throws -> String
    func cancel(consumerTag: String) async throws
    func ack(_ tag: DeliveryTag, multiple: Bool)
    func nack(_ tag: DeliveryTag, multiple: Bool, requeue: Bool)

    /// Writes a publish now and returns the promise its broker confirm completes.
    func startPublish(_ body: ByteBuffer, exchange: String, routingKey: String, mandatory: Bool, properties: BasicProperties,
                      timeout: TimeAmount?) throws -> EventLoopPromise<Void>
    /// Mandatory publishes the broker could not route; the stream ends when the channel closes.
    func returns() -> AsyncStream<AMQPReturnedMessage>
    /// Closes the channel.
    func close() async throws
}

extension AMQPChannel: BrokerChannel {}

/// The short forms Warren uses (named apart from ``AMQPChannel``'s own methods, whose defaults
/// would otherwise make calls on a concrete channel ambiguous).
extension BrokerChannel {
    /// Declares a durable queue the broker keeps by itself (not replayed by recovery).
    func declareDurable(_ name: String, arguments: FieldTable) async throws {
        try await queueDeclare(name, durable: true, exclusive: false, autoDelete: false, passive: false, arguments: arguments,
                               recordForRecovery: false)
    }

    /// Declares a transient exchange that goes with its last binding (recorded for recovery).
    func declareAutoDeleted(exchange name: String, type: String) async throws {
        try await exchangeDeclare(name, type: type, durable: false, autoDelete: true, internal: false, passive: false, arguments: [:])
    }

    func bind(queue: String, exchange: String, pattern: String, recorded: Bool) async throws {
        try await queueBind(queue: queue, exchange: exchange, routingKey: pattern, arguments: [:], recordForRecovery: recorded)
    }

    func unbind(queue: String, exchange: String, pattern: String) async throws {
        try await queueUnbind(queue: queue, exchange: exchange, routingKey: pattern, arguments: [:])
    }

    func startConsumer(queue: String, noAck: Bool = false, exclusive: Bool = false, sink: AMQPDeliverySink) async throws -> String {
        try await consume(queue: queue, consumerTag: nil, noAck: noAck, exclusive: exclusive, arguments: [:], sink: sink)
    }
}
