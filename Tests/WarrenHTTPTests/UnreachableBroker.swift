import AMQPClient
import NIOCore
import NIOPosix
import WarrenCore

/// A broker channel (and source of channels) that is never reachable: every call fails with
/// `notConnected`. For handler tests that open and close a session without subscribing, where
/// the bridge must not touch the broker at all.
final class UnreachableBroker: BrokerChannel, ChannelSource {
    var closeReason: AMQPError? { nil }

    func administration() async throws -> any BrokerChannel { throw AMQPError.notConnected }
    func consumption(prefetch: Int, near loop: (any EventLoop)?) async throws -> any BrokerChannel { throw AMQPError.notConnected }

    func exchangeDeclare(_ name: String, type: String, durable: Bool, autoDelete: Bool, internal: Bool, passive: Bool,
                         arguments: FieldTable) async throws { throw AMQPError.notConnected }
    func queueDeclare(_ name: String, durable: Bool, exclusive: Bool, autoDelete: Bool, passive: Bool, arguments: FieldTable,
                      recordForRecovery: Bool) async throws -> QueueDeclareOk { throw AMQPError.notConnected }
    func queueBind(queue: String, exchange: String, routingKey: String, arguments: FieldTable, recordForRecovery: Bool) async throws {
        throw AMQPError.notConnected
    }
    func queueUnbind(queue: String, exchange: String, routingKey: String, arguments: FieldTable) async throws { throw AMQPError.notConnected }
    func queueDelete(_ name: String, ifUnused: Bool, ifEmpty: Bool) async throws -> UInt32 { throw AMQPError.notConnected }
    func consume(queue: String, consumerTag: String?, noAck: Bool, exclusive: Bool, arguments: FieldTable,
                 sink: AMQPDeliverySink) async throws -> String { throw AMQPError.notConnected }
    func cancel(consumerTag: String) async throws { throw AMQPError.notConnected }
    func ack(_ tag: DeliveryTag, multiple: Bool) {}
    func nack(_ tag: DeliveryTag, multiple: Bool, requeue: Bool) {}
    func startPublish(_ body: ByteBuffer, exchange: String, routingKey: String, mandatory: Bool, properties: BasicProperties,
                      timeout: TimeAmount?) throws -> EventLoopPromise<Void> { throw AMQPError.notConnected }
    func returns() -> AsyncStream<AMQPReturnedMessage> { AsyncStream { $0.finish() } }
    func close() async throws {}
}
