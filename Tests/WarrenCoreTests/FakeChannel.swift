import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
@testable import WarrenCore

/// A broker channel that records what the bridge asks of it and lets a test hand deliveries
/// to its consumers, so session, live-hub and inbox logic run event by event with no socket.
final class FakeChannel: BrokerChannel {
    let name: String
    private struct State {
        var calls: [String] = []
        var consumers: [String: AMQPDeliverySink] = [:]
        var queues: [String: String] = [:]
        var nextTag: UInt64 = 0
        var nextConsumer = 0
        var failNext: AMQPError?
        var closeAtNext: UInt16?
        var closed: AMQPError?
        var returns: [AsyncStream<AMQPReturnedMessage>.Continuation] = []
        var gate: CallGate?
        var nacking = false
        var messageIDs: [String] = []
        var bodies: [String] = []
    }
    private let state = NIOLockedValueBox(State())

    init(_ name: String) { self.name = name }

    var closeReason: AMQPError? { state.withLockedValue { $0.closed } }
    var calls: [String] { state.withLockedValue { $0.calls } }
    var consumerTags: [String] { state.withLockedValue { Array($0.consumers.keys).sorted() } }
    /// The tag of the consumer of `queue` on this channel, if one is running.
    func consumer(of queue: String) -> String? {
        state.withLockedValue { s in s.consumers.keys.first { s.queues[$0] == queue } }
    }

    private func record(_ call: String) throws {
        let closing = try state.withLockedValue { s -> UInt16? in
            if let closed = s.closed { throw closed }
            s.calls.append(call)
            if let code = s.closeAtNext {
                s.closeAtNext = nil
                return code
            }
            if let e = s.failNext {
                s.failNext = nil
                throw e
            }
            return nil
        }
        if let closing {
            closeByBroker(closing)
            throw closeReason ?? .channelNotOpen(0)
        }
    }

    /// Holds the next declaration, binding or consume whose description (as in ``calls``) starts
    /// with `prefix` until the returned gate is opened.
    func hold(_ prefix: String) -> CallGate {
        let gate = CallGate(prefix)
        state.withLockedValue { $0.gate = gate }
        return gate
    }

    private func pass(_ call: String) async {
        let gate = state.withLockedValue { s -> CallGate? in
            guard let gate = s.gate, call.hasPrefix(gate.prefix) else { return nil }
            s.gate = nil
            return gate
        }
        await gate?.pass()
    }

    /// The next call fails with `error`.
    func failNext(_ error: AMQPError) { state.withLockedValue { $0.failNext = error } }

    /// The broker answers the next call with a channel error (`code`, say 404): the channel closes.
    func closeAtNext(_ code: UInt16) { state.withLockedValue { $0.closeAtNext = code } }

    func exchangeDeclare(_ name: String, type: String, durable: Bool, autoDelete: Bool, internal: Bool, passive: Bool,
                         arguments: FieldTable) async throws {
        try record("declare exchange \(name)")
    }
    func queueDeclare(_ name: String, durable: Bool, exclusive: Bool, autoDelete: Bool, passive: Bool, arguments: FieldTable,
                      recordForRecovery: Bool) async throws -> QueueDeclareOk {
        await pass("declare \(name)")
        try record("declare \(name)")
        return QueueDeclareOk(queue: name, messageCount: 0, consumerCount: 0)
    }
    func queueBind(queue: String, exchange: String, routingKey: String, arguments: FieldTable, recordForRecovery: Bool) async throws {
        await pass("bind \(queue) \(routingKey)")
        try record("bind \(queue) \(routingKey)")
    }
    func queueUnbind(queue: String, exchange: String, routingKey: String, arguments: FieldTable) async throws {
        try record("unbind \(queue) \(routingKey)")
    }
    func queueDelete(_ name: String, ifUnused: Bool, ifEmpty: Bool) async throws -> UInt32 {
        try record("delete \(name)")
        return 0
    }
    func consume(queue: String, consumerTag: String?, noAck: Bool, exclusive: Bool, arguments: FieldTable,
                 sink: AMQPDeliverySink) async throws -> String {
        await pass("consume \(queue)")
        try record("consume \(queue)")
        return state.withLockedValue { s in
            s.nextConsumer += 1
            let tag = consumerTag ?? "\(name)-c\(s.nextConsumer)"
            s.consumers[tag] = sink
            s.queues[tag] = queue
            return tag
        }
    }
    func cancel(consumerTag: String) async throws {
        try record("cancel \(consumerTag)")
        let sink = state.withLockedValue { $0.consumers.removeValue(forKey: consumerTag) }
        sink?.finish(nil)
    }
    func ack(_ tag: DeliveryTag, multiple: Bool) { try? record("ack \(tag.value)\(multiple ? "+" : "")") }
    func nack(_ tag: DeliveryTag, multiple: Bool, requeue: Bool) { try? record("nack \(tag.value)\(requeue ? " requeue" : "")") }

    func startPublish(_ body: ByteBuffer, exchange: String, routingKey: String, mandatory: Bool, properties: BasicProperties,
                      timeout: TimeAmount?) throws -> EventLoopPromise<Void> {
        try record("publish \(routingKey)")
        let promise = MultiThreadedEventLoopGroup.singleton.any().makePromise(of: Void.self)
        let nacking = state.withLockedValue { s in
            s.messageIDs.append(properties.messageID ?? "")
            s.bodies.append(String(buffer: body))
            return s.nacking
        }
        if nacking { promise.fail(AMQPError.publishNacked) } else { promise.succeed(()) }
        return promise
    }
    /// The message ids of the publishes, in order.
    var messageIDs: [String] { state.withLockedValue { $0.messageIDs } }
    /// The bodies of the publishes, in order.
    var bodies: [String] { state.withLockedValue { $0.bodies } }
    /// Every publish from now on is nacked.
    func nackPublishes() { state.withLockedValue { $0.nacking = true } }
    /// Ends when the channel is closed (``closeByBroker(_:)``), as an AMQP channel's does.
    func returns() -> AsyncStream<AMQPReturnedMessage> {
        let (stream, continuation) = AsyncStream<AMQPReturnedMessage>.makeStream()
        let open = state.withLockedValue { s in
            if s.closed == nil { s.returns.append(continuation) }
            return s.closed == nil
        }
        if !open { continuation.finish() }
        return stream
    }
    func close() async throws { try record("close") }

    /// The broker closes the channel with a channel error (`code`, say 406): later calls fail,
    /// its returns end and its consumers are finished with the error.
    func closeByBroker(_ code: UInt16 = 406) {
        let error = AMQPError.channelClosed(CloseArguments(replyCode: code, replyText: "closed by the fake broker"))
        let (returns, sinks) = state.withLockedValue { s in
            s.closed = error
            defer { s.returns = []; s.consumers = [:] }
            return (s.returns, Array(s.consumers.values))
        }
        returns.forEach { $0.finish() }
        sinks.forEach { $0.finish(error) }
    }

    /// The broker cancels consumer `consumerTag` (its queue was deleted); the channel stays open.
    func cancelByBroker(_ consumerTag: String) {
        let sink = state.withLockedValue { $0.consumers.removeValue(forKey: consumerTag) }
        sink?.finish(.consumerCancelled(consumerTag: consumerTag))
    }

    /// Hands a message to the consumer `consumerTag`, as the broker would; returns its delivery tag.
    @discardableResult
    func deliver(to consumerTag: String, routingKey: String, body: String, messageID: String? = nil,
                 redelivered: Bool = false, properties: BasicProperties? = nil, epoch: UInt64 = 1, exchange: String = "chat") -> UInt64 {
        let (sink, tag) = state.withLockedValue { s -> (AMQPDeliverySink?, UInt64) in
            s.nextTag += 1
            return (s.consumers[consumerTag], s.nextTag)
        }
        sink?.deliver(AMQPMessage(body: ByteBuffer(string: body),
                                  properties: properties ?? BasicProperties(contentType: "text/plain", messageID: messageID),
                                  exchange: exchange, routingKey: routingKey, redelivered: redelivered,
                                  deliveryTag: DeliveryTag(epoch: epoch, value: tag), consumerTag: consumerTag))
        return tag
    }
}
