import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Settings for per-user inbox queues (DESIGN §3, `inbox`).
public struct InboxSettings: Sendable, Equatable {
    /// `x-expires`: the queue goes after this long unused.
    public var expiresMilliseconds: Int = 7 * 24 * 3600 * 1000
    /// `x-max-length`.
    public var maxLength: Int = 10_000
    /// `x-overflow`: `drop-head` (default) or `reject-publish`.
    public var overflow: String = "drop-head"
    /// `classic` or `quorum`.
    public var queueType: String = "classic"
    /// Per-consumer prefetch: unacknowledged deliveries in flight to one client.
    public var prefetch: Int = 100

    public init() {}

    public var arguments: FieldTable {
        ["x-expires": .int64(Int64(expiresMilliseconds)), "x-max-length": .int64(Int64(maxLength)),
         "x-overflow": .string(overflow), "x-queue-type": .string(queueType)]
    }

    public static func queueName(user: String, device: String) -> String { "warren.inbox.\(user).\(device)" }
}

/// Receives inbox deliveries for one session.
public protocol InboxReceiver: AnyObject, Sendable {
    func deliverInbox(envelopeID: String, envelope: ByteBuffer, routeKey: String, redelivered: Bool, acceptedAt: Int64)
    func inboxEnded(_ error: AMQPError?)
}

/// One connected client's inbox: a durable queue bound with its inbox patterns,
/// consumed on a channel of its own while the client is connected.
///
/// A delivery is acked to RabbitMQ only when the client acks its envelope id.
/// Closing the channel at disconnect hands every unacknowledged delivery back
/// to RabbitMQ at once, so the next connection (on any node) gets it, marked
/// redelivered.
public final class InboxConsumer: AMQPDeliverySink, Sendable {
    public let queue: String
    let channel: AMQPChannel
    let exchange: String
    let settings: InboxSettings
    let metrics: WarrenMetrics
    weak let receiver: (any InboxReceiver)?
    let ids = UUIDv7Generator()
    private let tags = NIOLockedValueBox<[String: DeliveryTag]>([:])
    private let consumerTag = NIOLockedValueBox<String?>(nil)

    init(channel: AMQPChannel, queue: String, exchange: String, settings: InboxSettings, metrics: WarrenMetrics,
         receiver: any InboxReceiver) {
        self.metrics = metrics
        self.channel = channel
        self.queue = queue
        self.exchange = exchange
        self.settings = settings
        self.receiver = receiver
    }

    /// Declares the queue (idempotent: same arguments every time).
    func declare() async throws {
        try await channel.queueDeclare(queue, durable: true, arguments: settings.arguments, recordForRecovery: false)
        try await channel.basicQos(prefetchCount: UInt16(clamping: settings.prefetch))
    }

    public func bind(_ pattern: TopicPattern) async throws {
        try await channel.queueBind(queue: queue, exchange: exchange, routingKey: pattern.value, recordForRecovery: false)
    }

    public func unbind(_ pattern: TopicPattern) async throws {
        try await channel.queueUnbind(queue: queue, exchange: exchange, routingKey: pattern.value)
    }

    /// Starts consuming if not yet consuming.
    public func startConsuming() async throws {
        guard consumerTag.withLockedValue({ $0 }) == nil else { return }
        let tag = try await channel.consume(queue: queue, sink: self)
        consumerTag.withLockedValue { $0 = tag }
    }

    /// Acks the delivery that carried `envelopeID`; false if none is outstanding.
    public func ack(envelopeID: String) -> Bool {
        guard let tag = tags.withLockedValue({ $0.removeValue(forKey: envelopeID) }) else { return false }
        channel.ack(tag)
        return true
    }

    /// Closes the channel: RabbitMQ requeues everything not acked.
    public func close() async {
        try? await channel.close()
    }

    public func deliver(_ message: AMQPMessage) {
        metrics.message(message.routingKey, .amqp, .in, bytes: message.body.readableBytes)
        let accepted = EnvelopeAMQPMapping.acceptedAt(message.properties) ?? Clock.milliseconds()
        let (envelope, id) = EnvelopeAMQPMapping.clientEnvelope(message, ids: ids)
        tags.withLockedValue { $0[id] = message.deliveryTag }
        receiver?.deliverInbox(envelopeID: id, envelope: envelope, routeKey: message.routingKey, redelivered: message.redelivered,
                               acceptedAt: accepted)
    }

    public func finish(_ error: AMQPError?) {
        receiver?.inboxEnded(error)
    }
}
