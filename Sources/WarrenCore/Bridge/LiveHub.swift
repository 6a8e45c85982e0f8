import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The node's live fan-out (docs/protocol.md, `live`).
///
/// One exclusive, auto-delete queue per node (`warren.live.<node>`) is bound to
/// the union of the node's live patterns: a pattern is bound when its first
/// local subscriber arrives and unbound after its last leaves — or, past
/// `amqp.live_bind_all_after` distinct patterns, bound with `#` once
/// (``LiveBindings``). RabbitMQ sends one copy per node; the hub matches each
/// delivery against a ``TopicTrie`` and hands the same encoded envelope to
/// every matching local subscriber (a message no local pattern matches is
/// dropped here). Binding changes run one at a time, in order, so a subscribe
/// and an unsubscribe of the same pattern never race on the broker.
public final class LiveHub: Sendable, AMQPDeliverySink {
    public let queue: String
    let exchange: String
    /// Consumes the live queue, and nothing else: RabbitMQ serves a channel's work in order, so
    /// deliveries must not wait behind binding changes (a client churning subscriptions would
    /// otherwise delay every live delivery on the node). Replaced when the broker closes it.
    let channel: ReplaceableChannel
    /// Binds and unbinds the live queue's patterns (replaced when the broker closes it).
    let bindChannel: ReplaceableChannel
    let logger: Logger
    let metrics: WarrenMetrics
    /// Envelopes over `limits.max_message_bytes` from plain AMQP publishers go no further.
    let sizeGuard: EnvelopeSizeGuard
    let ids = UUIDv7Generator()
    /// The patterns' subscribers and the loops they live on.
    private let routes = NIOLockedValueBox(LiveRoutes())
    private let serial: SerialJobQueue
    /// The queue's bindings; changed only inside `serial`'s jobs (the lock is never contended).
    private let bindings: NIOLockedValueBox<LiveBindings>

    /// `bindAllAfter`: past this many distinct patterns the queue is bound with `#` instead of
    /// each pattern (0: never). `reopen` opens another channel on the same connection when the
    /// broker closed `channel` or `bindChannel` (nil: never replaced).
    public init(channel: any BrokerChannel, bindChannel: any BrokerChannel,
                reopen: (@Sendable () async throws -> any BrokerChannel)? = nil, queue: String, exchange: String,
                bindAllAfter: Int = 0, metrics: WarrenMetrics, sizeGuard: EnvelopeSizeGuard = .unlimited(), logger: Logger) {
        self.metrics = metrics
        self.sizeGuard = sizeGuard
        self.channel = ReplaceableChannel(channel, open: reopen)
        self.bindChannel = ReplaceableChannel(bindChannel, open: reopen)
        self.queue = queue
        self.exchange = exchange
        self.logger = logger
        self.serial = SerialJobQueue()
        self.bindings = NIOLockedValueBox(LiveBindings(bindAllAfter: bindAllAfter))
    }

    /// Declares the node's queue and starts consuming (no-ack: live is at most once).
    public func start() async throws {
        try await serial.run { [self] in try await establish() }
    }

    /// Declares the queue, binds what the node's subscribers need now, and consumes it: at start
    /// (nothing to bind yet), and again after the broker cancelled the consumer.
    private func establish() async throws {
        let channel = self.channel.channel
        try await channel.queueDeclare(queue, durable: false, exclusive: true, autoDelete: true, passive: false, arguments: [:],
                                       recordForRecovery: true)
        for key in bindings.withLockedValue({ $0.brokerKeys }) {
            try await binder().bind(queue: queue, exchange: exchange, pattern: key, recorded: true)
        }
        _ = try await channel.startConsumer(queue: queue, noAck: true, exclusive: true, sink: self)
    }

    /// The binding channel; a new one if the broker closed it (a bind refused with a channel
    /// error must not leave the node unable to bind again).
    private func binder() async throws -> any BrokerChannel {
        let current = bindChannel.channel
        guard ReplaceableChannel.closedByBroker(current) else { return current }
        logger.warning("the broker closed the live binding channel; opening another")
        return try await bindChannel.replace(current)
    }

    /// Binds the live queue again with every key it had (the exchange was deleted and declared
    /// again: its bindings went with it); returns how many bindings were made.
    public func restoreBindings() async -> Int {
        let made = try? await serial.run { [self] () async -> Int in
            await ExchangeWatch.bindAgain(bindings.withLockedValue { $0.brokerKeys }, queue: queue, exchange: exchange, recorded: true,
                                          on: { try await binder() }, logger: logger)
        }
        return made ?? 0
    }

    /// How many distinct live patterns this node's subscribers use.
    public var patternCount: Int { routes.withLockedValue { $0.trie.patternCount } }

    /// The live queue's bindings now.
    public var currentBindings: LiveBindings { bindings.withLockedValue { $0 } }

    /// Adds a live subscription (`subscriber` carries its receiver); returns once its binding is in place.
    public func subscribe(_ pattern: TopicPattern, subscriber: LiveSubscriber) async throws {
        try await serial.run { [self] in
            let (isFirst, distinct) = routes.withLockedValue { ($0.trie.subscribers(of: pattern).isEmpty, $0.trie.patternCount) }
            if isFirst {
                let steps = bindings.withLockedValue { $0.added(pattern.value, distinct: distinct + 1) }
                try await perform(steps)
            }
            routes.withLockedValue { _ = $0.insert(pattern, subscriber) }
        }
    }

    /// Adds a live subscription at once when that needs no broker call — the pattern is bound
    /// already, or the queue is bound with `#` — and no binding change is under way; false
    /// otherwise (nothing done: take ``subscribe(_:subscriber:)``). No task, no hop: a socket
    /// subscribing past `amqp.live_bind_all_after` is answered on its event loop.
    public func subscribeNow(_ pattern: TopicPattern, subscriber: LiveSubscriber) -> Bool {
        serial.runNowIfIdle { [self] in
            let all = bindings.withLockedValue { $0.all }
            return routes.withLockedValue { r in
                guard all || !r.trie.subscribers(of: pattern).isEmpty else { return false }
                _ = r.insert(pattern, subscriber)
                return true
            }
        } ?? false
    }

    /// Removes a live subscription; the binding goes when its last subscriber does.
    public func unsubscribe(_ pattern: TopicPattern, subscriber: LiveSubscriber) async {
        try? await serial.run { [self] in
            let (isLast, remaining) = routes.withLockedValue { r in
                r.remove(pattern, subscriber) ? (true, r.trie.patterns) : (false, [])
            }
            guard isLast else { return }
            let steps = bindings.withLockedValue { $0.removed(pattern.value, remaining: remaining) }
            do {
                try await perform(steps)
            } catch AMQPError.closedByUser {
                // Shutting down: the live queue goes with its connection, bindings and all.
                logger.debug("live unbind skipped: the broker connection is closing")
            } catch {
                logger.warning("live unbind failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Carries out binding changes in order, each recorded once the broker confirmed it.
    private func perform(_ steps: [LiveBindings.Step]) async throws {
        for step in steps {
            if let call = bindings.withLockedValue({ $0.brokerCall(step) }) {
                let binder = try await binder()
                if call.bind {
                    try await binder.bind(queue: queue, exchange: exchange, pattern: call.key, recorded: true)
                } else {
                    try await binder.unbind(queue: queue, exchange: exchange, pattern: call.key)
                }
            }
            bindings.withLockedValue { $0.apply(step) }
            switch step {
            case .bindAll:
                logger.info("live queue bound with # (past amqp.live_bind_all_after distinct patterns)",
                            metadata: ["patterns": "\(patternCount + 1)"])
            case .unbindAll:
                logger.info("live queue bound per pattern again", metadata: ["patterns": "\(patternCount)"])
            case .bind, .unbind:
                break
            }
        }
    }

    // MARK: AMQPDeliverySink

    public func deliver(_ message: AMQPMessage) {
        let routeClass = metrics.routeClass(message.routingKey)
        metrics.message(routeClass, .amqp, .in, bytes: message.body.readableBytes)
        guard let key = try? RouteKey(message.routingKey) else { return }
        let accepted = EnvelopeAMQPMapping.acceptedAt(message.properties) ?? WallClock.milliseconds()
        // The matched subscriber sets as the trie holds them (no copy of a subscriber), taken
        // under the lock and delivered outside it.
        let (matched, loops, loose) = routes.withLockedValue { $0.match(key) }
        if matched.isEmpty { return }
        let (envelope, _, own) = EnvelopeAMQPMapping.clientEnvelope(message, ids: ids)
        guard sizeGuard.admits(envelope.readableBytes, own: own, of: message, path: "live", metrics: metrics) else { return }
        let fanOut = LiveFanOut(matched: matched, envelope: envelope, routeKey: key, routeClass: routeClass, acceptedAt: accepted,
                                metrics: metrics)
        // Receivers with a loop of their own (poll sessions) get the message there: one hand-off
        // per message and loop (only the loops of the matched patterns' subscribers), handed over
        // first, every loop's share queued before any loop is woken, so that the other loops work
        // while this one does its own share (receivers without a loop, and those on this loop).
        var current: ObjectIdentifier?
        var wakes = LoopWakes()
        for loop in loops {
            let id = ObjectIdentifier(loop)
            if loop.inEventLoop {
                current = id
                continue
            }
            let share = fanOut.copied()
            wakes.hand({ share.deliver(loop: id) }, to: loop)
        }
        wakes.wake()
        if loose || current != nil { fanOut.deliver(loop: nil, current: current) }
    }

    /// The consumer ended. Cancelled by the broker (the live queue was deleted), or its channel
    /// closed by a channel error (a new one takes its place), the queue is declared, bound and
    /// consumed again, so the node does not go quiet; what was published meanwhile is lost (live
    /// is at most once).
    public func finish(_ error: AMQPError?) {
        BrokerRetry.setUpAgain(after: error, "the live consumer", channel: channel.channel, replacing: channel,
                               logger: logger) { [self] in
            try await serial.run { [self] in try await establish() }
        }
    }
}
