import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// One session's inbox: a durable queue bound with its inbox patterns, consumed while the
/// session is served on this node.
///
/// The consumer shares a channel with other sessions' consumers (``ChannelSource``), with a
/// prefetch of its own; declarations and bindings go through the administration channels. A
/// delivery is acked to RabbitMQ only when the client acks its envelope id. When the session
/// goes, the consumer is cancelled and every delivery not acked is handed back to RabbitMQ
/// (nack with requeue, one by one: the channel's other consumers are not touched), so the next
/// connection, on any node, gets it marked redelivered.
///
/// A delivery the client holds unacknowledged for `ackTimeout` is handed back the same way (and
/// comes again): RabbitMQ would otherwise, after its `consumer_timeout`, close the shared
/// channel and end every consumer on it for one client's sake. Deliveries are aged in sweeps,
/// four per `ackTimeout`, run on a timer only while some are outstanding: each remembers the
/// sweep count when it came (no clock read per delivery), and goes back between three quarters
/// of `ackTimeout` and all of it.
public final class InboxConsumer: AMQPDeliverySink, Sendable {
    public let queue: String
    let channels: any ChannelSource
    let loop: (any EventLoop)?
    let exchange: String
    let settings: InboxSettings
    let metrics: WarrenMetrics
    weak let receiver: (any InboxReceiver)?
    /// Where the node keeps its open inboxes (nil in tests that need none).
    let registry: InboxRegistry?
    let logger: Logger
    /// Envelopes over `limits.max_message_bytes` from plain AMQP publishers are rejected.
    let sizeGuard: EnvelopeSizeGuard
    let ids = UUIDv7Generator()

    struct Outstanding {
        var tag: DeliveryTag
        /// The channel it came on (a tag means nothing on another channel: acking it there would
        /// close that channel).
        var channel: any BrokerChannel
        /// ``State/sweeps`` when it came.
        var sweep: Int
    }

    private struct State {
        /// The consumption channel once consuming started; deliveries are acked on it.
        var channel: (any BrokerChannel)?
        var consumerTag: String?
        /// Unacknowledged deliveries by envelope id.
        var tags: [String: Outstanding] = [:]
        /// Between a cancel and its answer: deliveries still arriving go straight back.
        var stopping = false
        var starting = false
        /// Whether the session wants it consuming (from ``startConsuming()`` to ``stop(keeping:)``).
        var wanted = false
        /// ``close()`` was called: it never consumes again.
        var closed = false
        /// Sweeps run so far, and whether the next one is scheduled.
        var sweeps = 0
        var sweepScheduled = false
        /// The patterns the queue is bound with (put back by ``restoreBindings()``).
        var bound: Set<String> = []
    }
    static let sweepsPerTimeout = 4
    private let state = NIOLockedValueBox(State())

    /// `loop`: the receiving socket's event loop; the consumer goes on a channel of a broker
    /// connection running there when there is one (no hop per delivery or ack).
    init(channels: any ChannelSource, queue: String, exchange: String, settings: InboxSettings, metrics: WarrenMetrics,
         receiver: any InboxReceiver, loop: (any EventLoop)? = nil, registry: InboxRegistry? = nil,
         sizeGuard: EnvelopeSizeGuard = .unlimited(), logger: Logger = Logger(label: "warren.inbox")) {
        self.logger = logger
        self.sizeGuard = sizeGuard
        self.registry = registry
        self.loop = loop
        self.metrics = metrics
        self.channels = channels
        self.queue = queue
        self.exchange = exchange
        self.settings = settings
        self.receiver = receiver
    }

    /// Declares the queue (idempotent: same arguments every time). A queue RabbitMQ already has
    /// with other arguments — declared under an earlier `[inbox]` (`max_length`, `expires_ms`,
    /// `overflow`, `queue_type`, or `auto` choosing another type since `amqp.url` lists more
    /// brokers) — is refused with a 406, which left every such user's inbox `unavailable` until
    /// the queue expired. It is used as it is instead (a passive declare checks it is there),
    /// and the node says so once: the new settings apply to inboxes declared from now on.
    func declare() async throws {
        let (queue, arguments) = (queue, settings.arguments)
        do {
            try await channels.administering(queue: queue) { try await $0.declareDurable(queue, arguments: arguments) }
        } catch AMQPError.channelClosed(let reason) where reason.replyCode == ReplyCode.preconditionFailed {
            try await channels.administering(queue: queue) {
                _ = try await $0.queueDeclare(queue, durable: true, exclusive: false, autoDelete: false, passive: true, arguments: [:],
                                              recordForRecovery: false)
            }
            Self.reportOtherArguments(reason.replyText, queue: queue, logger: logger)
        }
    }

    private static let otherArgumentsReported = OnceFlag()

    /// Logs, once per process, that inbox queues declared under other settings are used as
    /// they are (one line per inbox would be one per user).
    private static func reportOtherArguments(_ detail: String, queue: String, logger: Logger) {
        guard otherArgumentsReported.first() else { return }
        let text = "inbox queues declared under other [inbox] settings are used as they are; the settings apply to inboxes "
            + "declared from now on (a RabbitMQ policy can lower max-length and expires of those; anything else takes deleting them; "
            + "quorum inboxes declared by a Warren before 0.19 have no delivery limit, which RabbitMQ 4 makes 20: see the README)"
        logger.warning("\(text)", metadata: ["queue": "\(queue)", "broker": "\(detail)"])
    }

    public func bind(_ pattern: TopicPattern) async throws {
        let (queue, exchange) = (queue, exchange)
        try await channels.administering(queue: queue) {
            try await $0.bind(queue: queue, exchange: exchange, pattern: pattern.value, recorded: false)
        }
        state.withLockedValue { _ = $0.bound.insert(pattern.value) }
    }

    public func unbind(_ pattern: TopicPattern) async throws {
        state.withLockedValue { _ = $0.bound.remove(pattern.value) }
        let (queue, exchange) = (queue, exchange)
        try await channels.administering(queue: queue) {
            try await $0.unbind(queue: queue, exchange: exchange, pattern: pattern.value)
        }
    }

    /// Binds the queue again with every pattern it had (the exchange was deleted and declared
    /// again: its bindings went with it); returns how many bindings were made.
    func restoreBindings() async -> Int {
        await ExchangeWatch.bindAgain(state.withLockedValue { $0.closed ? [] : $0.bound.sorted() }, queue: queue, exchange: exchange,
                                      recorded: false, on: { try await channels.administration() }, logger: logger)
    }

    /// Whether a consumer is running (or starting).
    public var isConsuming: Bool { state.withLockedValue { $0.consumerTag != nil || $0.starting } }

    /// Starts consuming if not yet consuming (and not closed).
    public func startConsuming() async throws {
        guard state.withLockedValue({ s -> Bool in
            guard !s.closed else { return false }
            s.wanted = true
            guard s.consumerTag == nil, !s.starting else { return false }
            s.starting = true
            return true
        }) else { return }
        do {
            try await consume()
        } catch {
            state.withLockedValue { $0.starting = false }
            throw error
        }
    }

    /// Consumes on a consumption channel (``State/starting`` is set by the caller, and cleared
    /// here once consuming). Stopped meanwhile, the new consumer is stopped again at once.
    private func consume() async throws {
        let channel = try await channels.consumption(prefetch: settings.prefetch, near: loop)
        state.withLockedValue { $0.channel = channel }
        let tag = try await channel.startConsumer(queue: queue, sink: self)
        let unwanted = state.withLockedValue { s -> Bool in
            s.consumerTag = tag
            s.starting = false
            return !s.wanted
        }
        if unwanted { await stop() }
    }

    private var wanted: Bool { state.withLockedValue { $0.wanted } }

    /// Acks the delivery that carried `envelopeID`; false if none is outstanding.
    @discardableResult
    public func ack(envelopeID: String) -> Bool {
        guard let held = take(envelopeID) else { return false }
        held.channel.ack(held.tag, multiple: false)
        return true
    }

    /// Hands the delivery that carried `envelopeID` back to RabbitMQ (a lease ran out); false if
    /// none is outstanding.
    @discardableResult
    public func release(envelopeID: String) -> Bool {
        guard let held = take(envelopeID) else { return false }
        held.channel.nack(held.tag, multiple: false, requeue: true)
        return true
    }

    private func take(_ envelopeID: String) -> Outstanding? {
        state.withLockedValue { $0.tags.removeValue(forKey: envelopeID) }
    }

    /// One sweep: hands back every delivery held `sweepsPerTimeout` sweeps or more, and schedules
    /// the next sweep while any are outstanding. Returns how many went back.
    @discardableResult
    func sweep() -> Int {
        let (expired, again) = state.withLockedValue { s -> ([Outstanding], Bool) in
            s.sweeps += 1
            let cutoff = s.sweeps - Self.sweepsPerTimeout
            let old = s.tags.filter { $0.value.sweep <= cutoff }
            for id in old.keys { s.tags[id] = nil }
            s.sweepScheduled = !s.tags.isEmpty
            return (Array(old.values), s.sweepScheduled)
        }
        for held in expired { held.channel.nack(held.tag, multiple: false, requeue: true) }
        if !expired.isEmpty { receiver?.inboxHandedBack(count: expired.count) }
        if again { scheduleSweep() }
        return expired.count
    }

    private func scheduleSweep() {
        let loop = loop ?? MultiThreadedEventLoopGroup.singleton.any()
        let interval = TimeAmount.milliseconds(Int64(settings.ackTimeout) * 1000 / Int64(Self.sweepsPerTimeout))
        loop.scheduleTask(in: interval) { [weak self] in self?.sweep() }
    }

    /// Stops consuming. Deliveries not acked are handed back to RabbitMQ: all of them, or with
    /// `keeping`, all but those (a poll session's leased batches stay leased until acked or
    /// released).
    public func stop(keeping: Set<String> = []) async {
        let (channel, tag) = state.withLockedValue { s -> ((any BrokerChannel)?, String?) in
            s.wanted = false
            defer { s.consumerTag = nil }
            if s.consumerTag != nil { s.stopping = true }
            return (s.channel, s.consumerTag)
        }
        if let channel, let tag { try? await channel.cancel(consumerTag: tag) }
        let handBack = state.withLockedValue { s in
            s.stopping = false
            let back = s.tags.filter { !keeping.contains($0.key) }
            for id in back.keys { s.tags[id] = nil }
            return Array(back.values)
        }
        for held in handBack { held.channel.nack(held.tag, multiple: false, requeue: true) }
    }

    /// Stops consuming and hands every unacknowledged delivery back, for good: a
    /// ``startConsuming()`` after it (a subscription that was being set up as its session
    /// ended) does nothing.
    public func close() async {
        state.withLockedValue { $0.closed = true }
        registry?.remove(self)
        await stop()
    }

    /// What ``deliver(_:)`` does with a delivery, decided under the lock.
    private enum Arrival {
        case handOn(startSweeping: Bool)
        /// A cancel is under way: straight back to RabbitMQ.
        case back(any BrokerChannel)
        /// Its envelope id is outstanding already: settled at once, not handed on.
        case duplicate(any BrokerChannel)
    }

    public func deliver(_ message: AMQPMessage) {
        guard let receiver else {
            // Its session is gone and did not close it: nothing may sit unacked here (it would
            // hold the shared channel), so the delivery goes back and the consumer stops.
            state.withLockedValue { $0.channel }?.nack(message.deliveryTag, multiple: false, requeue: true)
            Task { await close() }
            return
        }
        let (envelope, id, own) = EnvelopeAMQPMapping.clientEnvelope(message, ids: ids)
        guard sizeGuard.admits(envelope.readableBytes, own: own, of: message, path: "inbox", metrics: metrics) else {
            // Never to be delivered: requeued it would come back at every reconnect.
            state.withLockedValue { $0.channel }?.nack(message.deliveryTag, multiple: false, requeue: false)
            return
        }
        // One lock per delivery: it goes straight back (a cancel is under way), or its tag is
        // kept — unless the client already holds a live delivery with this envelope id (an AMQP
        // publisher that retried with the same `message_id`). Kept under the same id, the
        // first tag would never be acked nor handed back, and would hold its channel's
        // deliveries until RabbitMQ's consumer_timeout closed it for every consumer on it; and
        // clients dedupe by id (docs/protocol.md), acking the second copy as one seen before, which
        // Warren would answer `not_found`. So the copy is acked now and the client's ack of the
        // id settles the one it has.
        let arrival = state.withLockedValue { s -> Arrival in
            if s.stopping, let channel = s.channel { return .back(channel) }
            guard let channel = s.channel else { return .handOn(startSweeping: false) }
            let fresh = Outstanding(tag: message.deliveryTag, channel: channel, sweep: s.sweeps)
            // A held delivery from a channel or connection since gone is dead (RabbitMQ took it
            // back, and this may be it again, redelivered): the new one takes its place.
            if let held = s.tags.updateValue(fresh, forKey: id), held.channel === channel,
               held.tag.epoch == message.deliveryTag.epoch {
                s.tags[id] = held
                return .duplicate(channel)
            }
            if s.sweepScheduled { return .handOn(startSweeping: false) }
            s.sweepScheduled = true
            return .handOn(startSweeping: true)
        }
        switch arrival {
        case .back(let channel):
            channel.nack(message.deliveryTag, multiple: false, requeue: true)
            return
        case .duplicate(let channel):
            channel.ack(message.deliveryTag, multiple: false)
            metrics.dropped(message.routingKey, .duplicate)
            return
        case .handOn(let startSweeping):
            if startSweeping { scheduleSweep() }
        }
        let routeClass = metrics.routeClass(message.routingKey)
        metrics.message(routeClass, .amqp, .in, bytes: message.body.readableBytes)
        let accepted = EnvelopeAMQPMapping.acceptedAt(message.properties) ?? WallClock.milliseconds()
        receiver.deliverInbox(envelopeID: id, envelope: envelope, routeKey: message.routingKey, routeClass: routeClass,
                               redelivered: message.redelivered, acceptedAt: accepted)
    }

    /// The consumer ended: after our own cancel (nil), or by the broker. Its queue deleted (the
    /// broker cancels the consumer), the session is told. Its channel closed by a channel error —
    /// RabbitMQ's `consumer_timeout` set below `inbox.ack_timeout`, say, for any consumer on the
    /// shared channel — it consumes again on a new channel once the queue is seen to be there:
    /// the broker has put back what the closed channel held, and it comes again, redelivered.
    /// Outstanding tags stay with their channel: acks on a live channel still count, and on a
    /// closed one they are no-ops.
    public func finish(_ error: AMQPError?) {
        guard let error else { return }
        guard case .channelClosed = error else {
            state.withLockedValue { $0.consumerTag = nil }
            receiver?.inboxEnded(error)
            return
        }
        let restart = state.withLockedValue { s -> Bool in
            s.consumerTag = nil
            guard s.wanted, !s.starting else { return false }
            s.starting = true
            return true
        }
        guard restart else { return }
        logger.warning("the broker closed an inbox's consumption channel; consuming on another",
                       metadata: ["queue": "\(queue)", "error": "\(error)"])
        Task {
            let moved = await BrokerRetry.untilDone("consuming \(queue) again", logger: logger, stop: { [self] in
                !wanted || Self.queueGone($0) || ($0 as? AMQPError) == .closedByUser
            }) { [self] in
                try await channels.administration().queueDeclare(queue, durable: true, exclusive: false, autoDelete: false,
                                                                 passive: true, arguments: [:], recordForRecovery: false)
                try await consume()
                return true
            }
            guard moved == nil else { return }
            state.withLockedValue { $0.starting = false }
            if wanted { receiver?.inboxEnded(error) }
        }
    }

    /// A passive declare's answer when the queue is not there.
    static func queueGone(_ error: any Error) -> Bool {
        guard case .channelClosed(let reason) = error as? AMQPError else { return false }
        return reason.replyCode == ReplyCode.notFound
    }
}
