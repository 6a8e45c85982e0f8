import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Writes the conversation store from RabbitMQ (docs/protocol.md): the durable store queue (`warren.store`),
/// bound with `store.patterns`, consumed by every node as competing consumers. A message is
/// acked only after the transaction holding its row has committed; rows are keyed by envelope
/// id, so a redelivery (a node died between commit and ack) adds nothing. While the database is
/// unreachable, batches are retried with back-off and the queue holds everything else.
public final class StoreWriter: AMQPDeliverySink, Sendable {
    struct Item: Sendable {
        /// A message to keep, or nil for a fence.
        var message: StoredMessage?
        /// A recovery's fence (``StoreFence``), recorded with the batch.
        var fence: String?
        var tag: DeliveryTag
        /// The channel that delivered it: a delivery is acked on its own channel (a tag means
        /// nothing on another, and the broker would close that one for an unknown tag).
        var channel: any BrokerChannel
    }

    let store: any ConversationStore
    let settings: StoreSettings
    /// Envelopes over `limits.max_message_bytes` from plain AMQP publishers are not kept.
    let sizeGuard: EnvelopeSizeGuard
    /// The writer's own channel (one per node): batches are acked on it with one `multiple` ack.
    /// Replaced when the broker closes it with a channel error — RabbitMQ does that to a
    /// delivery left unacked past its `consumer_timeout` (30 minutes by default), which a
    /// database down that long would cause.
    let channel: ReplaceableChannel
    /// Declarations and bindings.
    let channels: any ChannelSource
    let exchange: String
    let metrics: StoreMetrics
    /// Told of the fences this writer records.
    let fence: StoreFence?
    let logger: Logger
    let ids = UUIDv7Generator()
    /// `store.patterns`, parsed; nil when `#` is among them (every route is kept).
    private let kept: [TopicPattern]?
    /// Whether a message outside `store.patterns` has come (said once in the log).
    private let strayReported = OnceFlag()
    private let batcher: NIOLockedValueBox<StoreBatcher<Item>>
    /// Consuming (set before the consumer starts: deliveries may come before `basic.consume-ok`
    /// is seen), and the consumer's tag once known.
    private let consumer = NIOLockedValueBox<(consuming: Bool, tag: String?)>((false, nil))
    private let failures = NIOLockedValueBox(0)

    /// `channel` must be the writer's alone (its prefetch set; nothing else consumes on it), so
    /// that one ack with `multiple` covers a whole batch. `reopen` opens another such channel
    /// when the broker has closed it (nil: never replaced).
    public init(store: any ConversationStore, settings: StoreSettings, channel: any BrokerChannel,
                reopen: (@Sendable () async throws -> any BrokerChannel)? = nil, channels: any ChannelSource,
                exchange: String, metrics: StoreMetrics, sizeGuard: EnvelopeSizeGuard = .unlimited(), fence: StoreFence? = nil,
                logger: Logger) {
        self.sizeGuard = sizeGuard
        self.fence = fence
        self.store = store
        self.settings = settings
        self.channel = ReplaceableChannel(channel, open: reopen)
        self.channels = channels
        self.exchange = exchange
        self.metrics = metrics
        self.logger = logger
        self.batcher = NIOLockedValueBox(StoreBatcher(maxBatch: settings.batchSize))
        let parsed = settings.patterns.compactMap { try? TopicPattern($0) }
        self.kept = parsed.contains { $0.value == "#" } ? nil : parsed
    }

    /// Declares and binds `warren.store`, unbinds the patterns an earlier configuration bound it
    /// with, and starts consuming it.
    public func start() async throws {
        let declared = try await declareQueue()
        let admin = try await channels.administration()
        if let warning = Self.sharingWarning(settings, otherConsumers: Int(declared.consumerCount)) {
            logger.warning("\(warning)", metadata: ["queue": "\(settings.queue)", "consumers": "\(declared.consumerCount)"])
        }
        for pattern in settings.patterns {
            try await admin.bind(queue: settings.queue, exchange: exchange, pattern: pattern, recorded: false)
        }
        await unbindFormerPatterns()
        consumer.withLockedValue { $0 = (true, nil) }
        let tag = try await channel.channel.startConsumer(queue: settings.queue, sink: self)
        consumer.withLockedValue { $0.tag = tag }
    }

    /// Declares `warren.store` as a `store.queue_type` queue with a single active consumer. It used to be classic whatever
    /// `amqp.url` listed: on a cluster it lived on one broker node, and what was published while
    /// that node was down was acknowledged to the client and never stored (the cluster soak:
    /// 6,548 of 21,190). A queue already there with other arguments (classic, declared by an
    /// earlier Warren) is refused with a 406: it is used as it is (a passive declare), and the
    /// node says why that matters; naming a new `store.queue` moves the store to a new one.
    private func declareQueue() async throws -> QueueDeclareOk {
        var arguments = QueueArguments.typed(settings.queueType)
        // One node writes at a time, in queue order (the others stand by and take over when it
        // goes): a recovery's fence then stands behind everything ahead of it (``StoreFence``).
        arguments["x-single-active-consumer"] = .bool(true)
        let queue = settings.queue
        do {
            return try await channels.administering(queue: queue) {
                try await $0.queueDeclare(queue, durable: true, exclusive: false, autoDelete: false, passive: false,
                                          arguments: arguments, recordForRecovery: false)
            }
        } catch AMQPError.channelClosed(let reason) where reason.replyCode == ReplyCode.preconditionFailed {
            let declared = try await channels.administering(queue: queue) {
                try await $0.queueDeclare(queue, durable: true, exclusive: false, autoDelete: false, passive: true,
                                          arguments: [:], recordForRecovery: false)
            }
            let text = "the store's queue was declared with other arguments and is used as it is"
                + (settings.queueType == "quorum" ? ": if it is a classic queue, what is published while its broker node is down is not stored; "
                   + "if it is a quorum queue declared before Warren set its delivery limit, RabbitMQ 4 drops a message returned to it 20 times; " : "; ")
                + "without a single active consumer, a recovery on resubscribe may miss a message written by another node at its seam; "
                + "to have a \(settings.queueType) queue with one active writer, set store.queue to a new name (the old queue is unbound; delete it once it is empty)"
            logger.warning("\(text)", metadata: ["queue": "\(queue)", "broker": "\(reason.replyText)"])
            return declared
        }
    }

    /// Unbinds from `warren.store` the patterns the store records it was bound with that are no
    /// longer in `store.patterns`, and every recorded pattern from a queue `store.queue` no
    /// longer names; then records this node's. Queues are durable and keep their bindings
    /// across restarts, and AMQP cannot list them: without the record, a narrowed
    /// `store.patterns` (say `#` to `room.#`, to stop keeping private conversations) left `#`
    /// bound, and everything went on being kept; and a renamed `store.queue` left the old queue
    /// bound and unconsumed, gathering every message until the broker's disk alarm stopped all
    /// publishing. (The old queue itself is left for the operator: it may hold messages the
    /// store does not have.) Nodes sharing a store share the record: the node started last
    /// decides. A database or broker failure here is logged and start goes on (the writer keeps
    /// only routes in `store.patterns` whatever reaches the queue).
    private func unbindFormerPatterns() async {
        let (store, settings, exchange, channels) = (store, settings, exchange, channels)
        do {
            let recorded = try await withDeadline(.seconds(5)) { try await store.boundPatterns() }
            for (queue, patterns) in recorded.sorted(by: { $0.key < $1.key }) {
                let stale = queue == settings.queue ? patterns.filter { !settings.patterns.contains($0) } : patterns
                for pattern in stale {
                    do {
                        try await channels.administering(queue: queue) {
                            try await $0.unbind(queue: queue, exchange: exchange, pattern: pattern)
                        }
                    } catch where queue != settings.queue && InboxConsumer.queueGone(error) {
                        // The old queue was deleted already: nothing bound to it.
                    }
                    let why = queue == settings.queue ? "not in store.patterns" : "store.queue is now \(settings.queue)"
                    logger.notice("unbound a pattern no longer configured from a store queue",
                                  metadata: ["queue": "\(queue)", "pattern": "\(pattern)", "why": "\(why)"])
                }
                if queue != settings.queue {
                    try await withDeadline(.seconds(5)) { try await store.recordBoundPatterns(queue: queue, []) }
                    logger.warning("the store's queue was renamed: the old one is no longer bound; delete it once nothing in it is needed",
                                   metadata: ["old": "\(queue)", "queue": "\(settings.queue)"])
                }
            }
            if Set(recorded[settings.queue] ?? []) != Set(settings.patterns) {
                try await withDeadline(.seconds(5)) { try await store.recordBoundPatterns(queue: settings.queue, settings.patterns) }
            }
        } catch {
            let text = "could not check the store queue's bindings against store.patterns: one dropped from it may still "
                + "be bound (what it brings is not kept)"
            logger.warning("\(text)", metadata: ["queue": "\(settings.queue)", "error": "\(error)"])
        }
    }

    /// Whether `routingKey` is a route `store.patterns` keeps. The queue's bindings make it so,
    /// except for a binding nobody recorded (one made before Warren recorded them, or by hand):
    /// what it brings is acked and not kept, and the log says so once.
    func keeps(routingKey: String) -> Bool {
        guard let kept else { return true }
        var key = routingKey
        let keeps = key.withUTF8 { bytes in TopicMatcher.isValidKey(bytes) && kept.contains { $0.matches(validKeyBytes: bytes) } }
        if !keeps, strayReported.first() {
            let text = "the store's queue is bound with a pattern outside store.patterns (an earlier configuration's, or one "
                + "made by hand); what it brings is not kept: remove the binding (rabbitmqctl or the management UI)"
            logger.warning("\(text)", metadata: ["queue": "\(settings.queue)", "route": "\(routingKey)"])
        }
        return keeps
    }

    /// What to say when other consumers already read the store queue and this node's store is
    /// an SQLite file: each node keeps only the messages it consumes, so nodes must share one
    /// store — the same file (one host) or one PostgreSQL. A second Warren started beside the
    /// first with a store of its own (another file, another working directory) silently kept
    /// half of every conversation; nil when there is nothing to say.
    static func sharingWarning(_ settings: StoreSettings, otherConsumers: Int) -> String? {
        guard otherConsumers > 0, settings.url.hasPrefix("sqlite:") else { return nil }
        return "\(settings.queue) already has \(otherConsumers) consumer(s): other Warren nodes write the conversation store "
            + "from it, and each keeps only the messages it consumes. Every node must write the same store: this SQLite file "
            + "(nodes on one host) or one PostgreSQL (store.url); a separate deployment on this broker needs a store.queue of its own"
    }

    /// Binds `warren.store` again with `store.patterns` (the exchange was deleted and declared
    /// again: its bindings went with it); returns how many bindings were made.
    public func restoreBindings() async -> Int {
        await ExchangeWatch.bindAgain(settings.patterns, queue: settings.queue, exchange: exchange, recorded: false,
                                      on: { try await channels.administration() }, logger: logger)
    }

    /// Stops consuming; deliveries not yet committed go back to the queue when the channel closes.
    public func stop() async {
        guard let tag = consumer.withLockedValue({ c in defer { c = (false, nil) }; return c.tag }) else { return }
        try? await channel.channel.cancel(consumerTag: tag)
    }

    /// Messages waiting in `warren.store` (a passive declare), recorded as the store's lag.
    @discardableResult
    public func measureLag() async -> Int? {
        guard let ok = try? await channels.administration().queueDeclare(
            settings.queue, durable: true, exclusive: false, autoDelete: false, passive: true, arguments: [:],
            recordForRecovery: false) else { return nil }
        metrics.lag(Int(ok.messageCount))
        return Int(ok.messageCount)
    }

    // MARK: deliveries (on the broker's event loop)

    public func deliver(_ delivery: AMQPMessage) {
        // The current channel is the one delivering: a replacement consumes only once the old
        // channel is closed, and a closed channel delivers nothing more.
        let channel = channel.channel
        guard consumer.withLockedValue({ $0.consuming }) else {
            channel.nack(delivery.deliveryTag, multiple: false, requeue: true)
            return
        }
        if let id = Self.fence(delivery) {
            if let batch = batcher.withLockedValue({ $0.received(Item(fence: id, tag: delivery.deliveryTag, channel: channel)) }) {
                write(batch)
            }
            return
        }
        guard keeps(routingKey: delivery.routingKey), let (message, own) = Self.storedMessage(delivery, settings: settings, ids: ids),
              sizeGuard.admits(message.envelope.utf8.count, own: own, of: delivery, path: "store", metrics: nil) else {
            channel.ack(delivery.deliveryTag, multiple: false)
            return
        }
        if let batch = batcher.withLockedValue({ $0.received(Item(message: message, tag: delivery.deliveryTag, channel: channel)) }) {
            write(batch)
        }
    }

    /// The consumer ended. Cancelled by the broker (`warren.store` was deleted), or its channel
    /// closed by a channel error, the queue is declared, bound and consumed again (on a new
    /// channel for the latter) — otherwise every message published from then on would miss the
    /// store. Deliveries not yet acked on a closed channel come again on the new one; batches
    /// holding them are still written, and their acks go to the closed channel, which drops them.
    public func finish(_ error: AMQPError?) {
        guard error != nil else { return }
        consumer.withLockedValue { $0 = (false, nil) }
        BrokerRetry.setUpAgain(after: error, "the store's consumer", channel: channel.channel, replacing: channel,
                               logger: logger) { [self] in try await start() }
    }

    private func write(_ batch: [Item]) {
        Task {
            let started = ContinuousClock.now
            do {
                // Bounded: a database that went away must not hold the batch (and the health) forever.
                // A write that commits after the deadline is written again: rows are keyed by id.
                let messages = batch.compactMap(\.message), fences = batch.compactMap(\.fence)
                try await withDeadline(.seconds(15)) { [store] in try await store.write(messages, fences: fences) }
                fence?.recorded(fences)
                let elapsed = ContinuousClock.now - started
                metrics.batchWritten(count: messages.count, nanoseconds: elapsed.components.seconds * 1_000_000_000
                                     + elapsed.components.attoseconds / 1_000_000_000)
                metrics.up(true)
                failures.withLockedValue { $0 = 0 }
                // Committed: now RabbitMQ may forget them. Batches are written in delivery order,
                // so one `multiple` ack of the newest tag covers the batch (and skipped messages
                // before it, acked already); tags of a connection that has since been replaced
                // are ignored (those deliveries come again, and add nothing).
                for (channel, tag) in Self.newestTags(batch) { channel.ack(tag, multiple: true) }
                if let next = batcher.withLockedValue({ $0.written() }) { write(next) }
            } catch let refusal as StoreRefusedData {
                // Not an outage: written again as it is, the batch would be refused for ever and
                // nothing after it kept. One message at a time, the one refused on its own is
                // given up, loudly; everything else is kept.
                if batch.count == 1 {
                    if let message = batch.first?.message {
                        metrics.refused()
                        logger.error("the conversation store refused a message; it is not kept",
                                     metadata: ["id": "\(message.id)", "route": "\(message.route)", "error": "\(refusal)"])
                    }
                    for (channel, tag) in Self.newestTags(batch) { channel.ack(tag, multiple: true) }
                }
                if let next = batcher.withLockedValue({ $0.refused(batch) }) { write(next) }
            } catch {
                metrics.writeFailed()
                metrics.up(false)
                let attempt = failures.withLockedValue { f -> Int in
                    f += 1
                    return f
                }
                if attempt == 1 || attempt % 30 == 0 {
                    logger.error("cannot write to the conversation store; retrying (the queue holds the messages)",
                                 metadata: ["error": "\(error)", "batch": "\(batch.count)", "attempt": "\(attempt)"])
                }
                batcher.withLockedValue { $0.failed(batch) }
                try? await Task.sleep(for: .milliseconds(min(5_000, 100 << min(attempt, 6))))
                if let again = batcher.withLockedValue({ $0.retry() }) { write(again) }
            }
        }
    }

    /// The newest delivery tag of each channel and connection epoch in a batch, with its channel.
    static func newestTags(_ batch: [Item]) -> [(channel: any BrokerChannel, tag: DeliveryTag)] {
        var newest: [(channel: any BrokerChannel, tag: DeliveryTag)] = []
        for item in batch {
            if let i = newest.firstIndex(where: { $0.channel === item.channel && $0.tag.epoch == item.tag.epoch }) {
                if newest[i].tag.value < item.tag.value { newest[i].tag = item.tag }
            } else {
                newest.append((item.channel, item.tag))
            }
        }
        return newest
    }

    /// The id of a recovery's fence (``StoreFence``): a message of Warren's own type published
    /// to the store's queue through the default exchange; nil for anything else.
    static func fence(_ delivery: AMQPMessage) -> String? {
        guard delivery.exchange.isEmpty, delivery.properties.type == StoreFence.messageType,
              let id = delivery.properties.messageID else { return nil }
        return UUIDv7Generator.canonical(id)
    }

    /// What is kept of a delivery, or nil when it is not kept (transient, or a skipped type; the
    /// queue's bindings already leave out routes outside `store.patterns`; a routing key that is
    /// no route, which no client could ask the history of).
    /// `own`: Warren's own publish, kept as it came.
    static func storedMessage(_ delivery: AMQPMessage, settings: StoreSettings, ids: UUIDv7Generator) -> (message: StoredMessage, own: Bool)? {
        let properties = delivery.properties
        if properties.expiration == "0" { return nil }
        var route = delivery.routingKey
        guard route.withUTF8(TopicMatcher.isValidKey) else { return nil }
        let now = WallClock.milliseconds()
        switch EnvelopeAMQPMapping.incoming(body: delivery.body, properties: properties, routingKey: delivery.routingKey,
                                            nowMilliseconds: now, newID: { ids.next(nowMilliseconds: UInt64(now)) }) {
        case .passthrough(let bytes):
            // Warren's own publish: the columns ride in the properties; the body is the envelope.
            // Any AMQP publisher can set that mark, so the columns are checked as a back end's
            // fields are (a NUL in one would stop PostgreSQL from taking the batch).
            guard let id = properties.messageID, let sender = properties.headers?["from"]?.stringValue, Envelope.isValidSender(sender),
                  let type = properties.type, Envelope.isValidType(type), settings.keeps(type: type, transient: false) else { return nil }
            return (StoredMessage(id: id, route: delivery.routingKey, sender: sender, type: type,
                                  ts: EnvelopeAMQPMapping.acceptedAt(properties) ?? now,
                                  envelope: String(decoding: bytes.readableBytesView, as: UTF8.self),
                                  sortKey: SortKey.of(id: id, storedAt: now)), true)
        case .translated(let envelope):
            guard settings.keeps(type: envelope.type, transient: envelope.transient) else { return nil }
            return (StoredMessage(id: envelope.id, route: envelope.route, sender: envelope.from, type: envelope.type, ts: envelope.ts,
                                  envelope: String(decoding: envelope.encoded(), as: UTF8.self),
                                  sortKey: SortKey.of(id: envelope.id, storedAt: now)), false)
        }
    }
}
