import NIOConcurrencyHelpers
import NIOCore

/// A channel: the unit of work on an AMQP connection.
///
/// Its id and its settings (qos, confirm mode) survive a recovery: the
/// connection reopens it on the new link. A channel error from the broker
/// (404, 406, …) closes it for good; later calls throw that error.
public final class AMQPChannel: Sendable {
    public let id: UInt16
    let connection: AMQPConnection
    private let closedError = NIOLockedValueBox<AMQPError?>(nil)

    init(id: UInt16, connection: AMQPConnection) {
        self.id = id
        self.connection = connection
    }

    /// The event loop its connection always runs on, if it was given one loop (see
    /// ``AMQPConnection/eventLoop``).
    public var eventLoop: (any EventLoop)? { connection.eventLoop }

    /// Why the channel is closed, or nil while it is usable.
    public var closeReason: AMQPError? { closedError.withLockedValue { $0 } }

    func markClosed(_ error: AMQPError) {
        closedError.withLockedValue { if $0 == nil { $0 = error } }
    }

    private func request(_ method: AMQPMethod, sink: AMQPDeliverySink? = nil) async throws -> RPCResponse {
        if let error = closeReason { throw error }
        return try await connection.request(method, channel: id, sink: sink)
    }

    // MARK: exchanges

    /// Declares an exchange (recorded for recovery unless passive).
    /// A passive declare of a missing exchange fails with 404 and closes this channel.
    public func exchangeDeclare(_ name: String, type: String = "topic", durable: Bool = true, autoDelete: Bool = false,
                                internal: Bool = false, passive: Bool = false, arguments: FieldTable = [:]) async throws {
        let declare = ExchangeDeclare(exchange: name, type: type, passive: passive, durable: durable,
                                      autoDelete: autoDelete, internal: `internal`, arguments: arguments)
        _ = try await request(.exchangeDeclare(declare))
        connection.record { $0.recordExchange(declare) }
    }

    public func exchangeDelete(_ name: String, ifUnused: Bool = false) async throws {
        _ = try await request(.exchangeDelete(exchange: name, ifUnused: ifUnused, noWait: false))
        connection.record { $0.deleteExchange(name) }
    }

    // MARK: queues

    /// Declares a queue; an empty name asks the broker to name it. Recorded for recovery unless
    /// passive or `recordForRecovery` is false (for durable queues the broker keeps anyway, and
    /// that should not be resurrected after they expire).
    @discardableResult
    public func queueDeclare(_ name: String = "", durable: Bool = false, exclusive: Bool = false, autoDelete: Bool = false,
                             passive: Bool = false, arguments: FieldTable = [:],
                             recordForRecovery: Bool = true) async throws -> QueueDeclareOk {
        let declare = QueueDeclare(queue: name, passive: passive, durable: durable, exclusive: exclusive,
                                   autoDelete: autoDelete, arguments: arguments)
        guard case .method(.queueDeclareOk(let ok)) = try await request(.queueDeclare(declare)) else {
            throw AMQPError.protocolViolation(.commandInvalid("queue.declare answered with something else"))
        }
        if recordForRecovery { connection.record { $0.recordQueue(declare, name: ok.queue) } }
        return ok
    }

    /// Binds a queue; recorded for recovery unless `recordForRecovery` is false (durable
    /// bindings of durable queues survive on the broker by themselves).
    public func queueBind(queue: String, exchange: String, routingKey: String, arguments: FieldTable = [:],
                          recordForRecovery: Bool = true) async throws {
        _ = try await request(.queueBind(QueueBind(queue: queue, exchange: exchange, routingKey: routingKey, arguments: arguments)))
        if recordForRecovery {
            connection.record { $0.recordBinding(queue: queue, exchange: exchange, routingKey: routingKey, arguments: arguments) }
        }
    }

    public func queueUnbind(queue: String, exchange: String, routingKey: String, arguments: FieldTable = [:]) async throws {
        _ = try await request(.queueUnbind(QueueBind(queue: queue, exchange: exchange, routingKey: routingKey, arguments: arguments)))
        connection.record { $0.deleteBinding(queue: queue, exchange: exchange, routingKey: routingKey, arguments: arguments) }
    }

    /// Deletes a queue; returns how many messages it held.
    @discardableResult
    public func queueDelete(_ name: String, ifUnused: Bool = false, ifEmpty: Bool = false) async throws -> UInt32 {
        let response = try await request(.queueDelete(queue: name, ifUnused: ifUnused, ifEmpty: ifEmpty, noWait: false))
        connection.record { $0.deleteQueue(name) }
        if case .method(.queueDeleteOk(let count)) = response { return count }
        return 0
    }

    /// Removes every ready message; returns how many.
    @discardableResult
    public func queuePurge(_ name: String) async throws -> UInt32 {
        if case .method(.queuePurgeOk(let count)) = try await request(.queuePurge(queue: name, noWait: false)) { return count }
        return 0
    }

    // MARK: qos and confirms

    /// Sets the prefetch window. With `global == false` (RabbitMQ) it applies to each consumer
    /// started on this channel afterwards. Restored after recovery.
    public func basicQos(prefetchCount: UInt16, prefetchSize: UInt32 = 0, global: Bool = false) async throws {
        _ = try await request(.basicQos(prefetchSize: prefetchSize, prefetchCount: prefetchCount, global: global))
        connection.updateChannel(id) { $0.qos = (prefetchCount, prefetchSize, global) }
    }

    /// Puts the channel in publisher-confirm mode: every `publish` then returns only when the broker acked it.
    public func confirmSelect() async throws {
        _ = try await request(.confirmSelect(noWait: false))
        connection.updateChannel(id) { $0.confirm = true }
    }

    // MARK: publishing

    /// Publishes a message. In confirm mode this returns once the broker acked it and throws
    /// ``AMQPError/publishNacked`` on a nack, or a connection error if the link dropped first;
    /// a publish is never reported as done when it is not. Cancelling the calling task stops
    /// the wait with `CancellationError` (the outcome is then unknown to the caller).
    public func publish(_ body: ByteBuffer, exchange: String, routingKey: String, mandatory: Bool = false,
                        properties: BasicProperties = BasicProperties()) async throws {
        let confirmation = try startPublish(body, exchange: exchange, routingKey: routingKey, mandatory: mandatory,
                                            properties: properties)
        // A cancelled caller stops waiting (the confirm may still come; it is then ignored).
        try await withTaskCancellationHandler {
            try await confirmation.futureResult.get()
        } onCancel: {
            confirmation.fail(CancellationError())
        }
    }

    /// Writes a publish now, without suspending, and returns the promise its confirm completes.
    ///
    /// Publishes started one after another from one thread reach the broker in that order,
    /// which an `async` call cannot promise once callers run in separate tasks. With
    /// `timeout`, the promise fails with ``AMQPError/timedOut(_:)`` if no confirm came in time.
    public func startPublish(_ body: ByteBuffer, exchange: String, routingKey: String, mandatory: Bool = false,
                             properties: BasicProperties = BasicProperties(),
                             timeout: TimeAmount? = nil) throws -> EventLoopPromise<Void> {
        if let error = closeReason { throw error }
        try Self.validate(exchange: exchange, routingKey: routingKey, properties: properties)
        let link = try connection.currentLink()
        let promise = link.channel.eventLoop.makePromise(of: Void.self)
        let publish = BasicPublish(exchange: exchange, routingKey: routingKey, mandatory: mandatory)
        link.channel.writeAndFlush(AMQPCommand.publish(channel: id, publish, properties, body, promise))
            .whenFailure { _ in promise.fail(AMQPError.notConnected) }
        if let timeout {
            let timer = link.channel.eventLoop.scheduleTask(in: timeout) { promise.fail(AMQPError.timedOut("publisher confirm")) }
            promise.futureResult.whenComplete { _ in timer.cancel() }
        }
        return promise
    }

    /// The same as ``publish(_:exchange:routingKey:mandatory:properties:)`` for a string body.
    public func publish(_ body: String, exchange: String, routingKey: String, mandatory: Bool = false,
                        properties: BasicProperties = BasicProperties()) async throws {
        try await publish(ByteBuffer(string: body), exchange: exchange, routingKey: routingKey, mandatory: mandatory,
                          properties: properties)
    }

    /// Messages the broker returned (mandatory publishes it could not route). The stream ends
    /// when the channel closes (at once if it is closed already); a link loss does not end it.
    public func returns() -> AsyncStream<AMQPReturnedMessage> {
        let (stream, continuation) = AsyncStream<AMQPReturnedMessage>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        if !connection.updateChannel(id, { $0.returns.append(continuation) }) { continuation.finish() }
        return stream
    }

    static func validate(exchange: String, routingKey: String, properties: BasicProperties) throws(AMQPError) {
        guard exchange.utf8.count <= 255 else { throw .invalidArgument("exchange name longer than 255 bytes") }
        guard routingKey.utf8.count <= 255 else { throw .invalidArgument("routing key longer than 255 bytes") }
        var scratch = ByteBuffer()
        do { try properties.write(to: &scratch) } catch { throw .invalidArgument("properties: \(error)") }
    }

    // MARK: consuming

    /// Starts a consumer and returns its deliveries as an async sequence.
    ///
    /// The sequence is back-pressured by the prefetch window (``basicQos(prefetchCount:prefetchSize:global:)``):
    /// the broker sends no more than that many unacknowledged messages. It carries on
    /// across recoveries, ends normally after ``cancel(consumerTag:)``, and ends with
    /// ``AMQPError/consumerCancelled(consumerTag:)`` when the broker cancels it.
    public func consume(queue: String, consumerTag: String? = nil, noAck: Bool = false, exclusive: Bool = false,
                        arguments: FieldTable = [:]) async throws -> AMQPConsumer {
        let sink = StreamSink()
        let tag = try await consume(queue: queue, consumerTag: consumerTag, noAck: noAck, exclusive: exclusive,
                                    arguments: arguments, sink: sink)
        return AMQPConsumer(tag: tag, channel: self, stream: sink.stream)
    }

    /// Starts a consumer that hands deliveries straight to `sink` on the event loop (no hop per message).
    @discardableResult
    public func consume(queue: String, consumerTag: String? = nil, noAck: Bool = false, exclusive: Bool = false,
                        arguments: FieldTable = [:], sink: AMQPDeliverySink) async throws -> String {
        let tag = consumerTag ?? connection.nextConsumerTag(channel: id)
        let consume = BasicConsume(queue: queue, consumerTag: tag, noAck: noAck, exclusive: exclusive, arguments: arguments)
        let tracked = TrackedSink(inner: sink) { [weak connection] in
            connection?.record { $0.deleteConsumer(tag) }
        }
        _ = try await request(.basicConsume(consume), sink: tracked)
        connection.record { $0.recordConsumer(.init(channel: id, consume: consume, sink: tracked)) }
        return tag
    }

    /// Cancels a consumer; its sequence ends after the broker confirmed.
    public func cancel(consumerTag: String) async throws {
        connection.record { $0.deleteConsumer(consumerTag) }
        _ = try await request(.basicCancel(consumerTag: consumerTag, noWait: false))
    }

    /// Fetches one message, or nil when the queue is empty.
    public func get(queue: String, noAck: Bool = false) async throws -> AMQPMessage? {
        guard case .message(let message) = try await request(.basicGet(queue: queue, noAck: noAck)) else { return nil }
        return message
    }

    // MARK: acknowledgements

    /// Acknowledges a delivery. A tag from before a reconnect is ignored: the broker
    /// has already requeued that message.
    public func ack(_ tag: DeliveryTag, multiple: Bool = false) {
        sendIfCurrent(tag, .basicAck(deliveryTag: tag.value, multiple: multiple))
    }

    /// Negatively acknowledges (by default requeues) one or, with `multiple`, all deliveries up to `tag`.
    public func nack(_ tag: DeliveryTag, multiple: Bool = false, requeue: Bool = true) {
        sendIfCurrent(tag, .basicNack(deliveryTag: tag.value, multiple: multiple, requeue: requeue))
    }

    public func reject(_ tag: DeliveryTag, requeue: Bool = true) {
        sendIfCurrent(tag, .basicReject(deliveryTag: tag.value, requeue: requeue))
    }

    private func sendIfCurrent(_ tag: DeliveryTag, _ method: AMQPMethod) {
        guard closeReason == nil, let link = try? connection.currentLink(), link.epoch == tag.epoch else { return }
        AckCoalescer.send(AMQPCommand.send(channel: id, method), on: link.channel)
    }

    // MARK: closing

    /// Closes the channel; its consumers end normally.
    public func close() async throws {
        guard closeReason == nil else { return }
        if let link = try? connection.currentLink() {
            _ = try? await connection.send(.closeChannel(id, link.channel.eventLoop.makePromise()), on: link)
        }
        connection.forgetChannel(id, error: nil)
    }
}
