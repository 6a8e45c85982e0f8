import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// The running bridge once the broker link is up: the publisher, the live hub,
/// inbox access and the rules every session shares.
public final class BridgeRuntime: Sendable {
    /// The long-lived channels every session's inbox and every declaration share.
    public let channels: any ChannelSource
    public let publisher: Publisher
    public let hub: LiveHub
    public let exchange: String
    public let limits: BridgeLimits
    public let inbox: InboxSettings
    public let policy: AccessPolicy
    public let metrics: WarrenMetrics
    /// Per-user connection and publish-rate limits on this node.
    public let users: UserLimiter
    /// The inbox devices each user used lately on this node (`limits.max_devices_per_user`).
    public let devices: DeviceBook
    /// History, conversations and read markers; nil when `store.enabled = false`.
    public let conversations: Conversations?
    /// Presence across nodes; nil when `presence.enabled = false`.
    public let presence: Presence?
    /// This node's queue on the presence exchange, there with presence off too: poll sessions
    /// deleted here are told to the other nodes through it, and polls' acks of other nodes'
    /// cursors handed to them.
    let peers: Presence?
    /// Puts the exchange back, with this node's bindings, when it was deleted on the broker.
    public let exchangeWatch: ExchangeWatch?
    /// The inboxes open on this node (their bindings are put back with the exchange).
    let inboxes = InboxRegistry()
    let logger: Logger
    private let slowConsumers = NIOLockedValueBox(0)

    /// Sockets closed with 4008 so far (exported as a metric by the operations work).
    public var slowConsumerCount: Int { slowConsumers.withLockedValue { $0 } }
    func countSlowConsumer(route: String?) {
        slowConsumers.withLockedValue { $0 += 1 }
        metrics.dropped(route, .slowConsumer)
        metrics.limitHit(.ws, .slowConsumer)
    }

    public init(channels: any ChannelSource, publisher: Publisher, hub: LiveHub, exchange: String, limits: BridgeLimits,
                inbox: InboxSettings, policy: AccessPolicy, metrics: WarrenMetrics, conversations: Conversations? = nil,
                presence: Presence? = nil, exchangeWatch: ExchangeWatch? = nil, logger: Logger) {
        self.metrics = metrics
        self.exchangeWatch = exchangeWatch
        self.conversations = conversations
        self.presence = presence?.settings.enabled == true ? presence : nil
        self.peers = presence
        self.channels = channels
        self.publisher = publisher
        self.hub = hub
        self.exchange = exchange
        self.limits = limits
        self.inbox = inbox
        self.policy = policy
        self.users = UserLimiter(limits)
        self.devices = DeviceBook(maxDevices: limits.maxDevicesPerUser, windowMilliseconds: inbox.expiresMilliseconds)
        self.logger = logger
    }

    /// Envelope types only Warren publishes: presence (docs/protocol.md) and read receipts (§10).
    /// Their body names a user (`{"user":"bob",…}`) that clients show as who came, went or
    /// read; from a client, `from` would be the sender but the body anyone, so mallory could
    /// make bob leave a room or read a message on everyone's screen, and clear bob's own unread
    /// badge (a receipt of bob's is how his other devices learn he read).
    public static let warrenOnlyTypes: Set<String> = ["presence", "read"]

    /// The one admission path for publishes, whatever the door: a type only Warren publishes
    /// is refused (``warrenOnlyTypes``), every route must be allowed by the user's rules (one
    /// forbidden route refuses the whole send), then the per-user publish rate takes one token
    /// per route. Nil when the publish may go on, else the error to answer (counted as a drop,
    /// and a limit hit for the rate).
    public func admitPublish(_ request: PublishRequest, from user: String, rules: AccessRules, via frontend: Frontend) -> ProtocolError? {
        if Self.warrenOnlyTypes.contains(request.type) {
            metrics.dropped(request.routes.first?.value, .forbidden)
            return ProtocolError(.forbidden, "type \(request.type) is published only by Warren (presence, read receipts)",
                                 ref: request.cid)
        }
        for route in request.routes where !rules.canPublish(route) {
            metrics.dropped(route.value, .forbidden)
            return ProtocolError(.forbidden, "not allowed to publish to \(route.value)", ref: request.cid)
        }
        guard !users.takePublishes(user, count: request.routes.count) else { return nil }
        metrics.limitHit(frontend, .publishRate)
        metrics.dropped(request.routes.first?.value, .rateLimited)
        return ProtocolError(.rateLimited, "publish rate limit: \(limits.publishRate) a second per user", ref: request.cid)
    }

    /// The conversation store for one request of `user`'s, or `unavailable` when it is off;
    /// `rate_limited` past `limits.query_rate` (each request is a database query, and one
    /// user's flood would slow every user's history and the store's writes).
    public func store(for user: String, via: Via) throws(ProtocolError) -> Conversations {
        guard let conversations else { throw ProtocolError(.unavailable, "the conversation store is off (store.enabled = false)", ref: nil) }
        guard users.takeQuery(user) else {
            metrics.limitHit(Frontend(clientDoor: via), .queryRate)
            throw ProtocolError(.rateLimited, "store request rate limit: \(limits.queryRate) a second per user", ref: nil)
        }
        return conversations
    }

    /// The users present on `route` on every node: allowed when the user may subscribe to it.
    public func presentUsers(route text: String, rules: AccessRules) throws(ProtocolError) -> [String] {
        guard let presence else { throw ProtocolError(.unavailable, "presence is off (presence.enabled = false)", ref: nil) }
        let route: RouteKey
        do { route = try RouteKey(text) } catch { throw ProtocolError(.badRoute, error.description, ref: nil) }
        guard let pattern = try? TopicPattern(route.value), rules.canSubscribe(pattern) else {
            throw ProtocolError(.forbidden, "not allowed to read \(route.value)", ref: nil)
        }
        return presence.users(route: route.value)
    }

    /// Moves a user's read marker (docs/protocol.md) and, when it moved, publishes the transient `read`
    /// envelope on the route so the user's other devices and the other participants see it. The
    /// receipt takes a token of the user's publish rate. Returns the route and the marker as it stands.
    public func markRead(user: String, rules: AccessRules, route: String, id: String, via: Via) async throws(ProtocolError)
        -> (route: RouteKey, marker: String) {
        let (key, marker, moved) = try await store(for: user, via: via).markRead(user: user, route: route, id: id, rules: rules)
        guard moved else { return (key, marker) }
        guard users.takePublishes(user, count: 1) else {
            metrics.limitHit(Frontend(clientDoor: via), .publishRate)
            throw ProtocolError(.rateLimited, "publish rate limit: \(limits.publishRate) a second per user", ref: nil)
        }
        let receipt = PublishRequest(routes: [key], multicast: false, type: "read",
                                     body: .object([(key: "user", value: .string(user)), (key: "id", value: .string(marker))]),
                                     cid: nil, transient: true, headers: [])
        _ = try publisher.submit(receipt, from: user, via: via, maxMessageBytes: limits.maxMessageBytes)
        return (key, marker)
    }

    /// Sets up the publisher channel and the node's live queue on the first connection, and the
    /// channel pool over all of them; with a store, starts this node's writer of `warren.store`.
    public static func start(connections: [AMQPConnection], configuration: BridgeConfiguration, nodeID: String,
                             metrics: WarrenMetrics, conversations: Conversations? = nil, logger: Logger) async throws -> BridgeRuntime {
        let primary = connections[0]
        let sizeGuard = EnvelopeSizeGuard(maxBytes: configuration.limits.maxMessageBytes, logger: logger)
        let publishChannel = try await primary.openChannel()
        try await publishChannel.confirmSelect()
        // The live queue is exclusive to the connection that declared it: its consumer and its
        // bindings stay on that connection.
        let hub = LiveHub(channel: try await primary.openChannel(), bindChannel: try await primary.openChannel(),
                          reopen: { try await primary.openChannel() }, queue: "warren.live.\(nodeID)", exchange: configuration.amqp.exchange,
                          bindAllAfter: configuration.amqp.liveBindAllAfter, metrics: metrics, sizeGuard: sizeGuard, logger: logger)
        try await hub.start()
        let pool = ChannelPool(connections: connections, administrationChannels: configuration.amqp.administrationChannels,
                               consumptionChannels: configuration.amqp.consumptionChannels)
        if let conversations {
            // The writer's own channel, with room for two batches in flight.
            let openStoreChannel: @Sendable () async throws -> any BrokerChannel = {
                let channel = try await primary.openChannel()
                try await channel.basicQos(prefetchCount: UInt16(clamping: conversations.settings.batchSize * 2))
                return channel
            }
            let writer = StoreWriter(store: conversations.store, settings: conversations.settings,
                                     channel: try await openStoreChannel(), reopen: openStoreChannel, channels: pool,
                                     exchange: configuration.amqp.exchange, metrics: conversations.metrics, sizeGuard: sizeGuard,
                                     fence: conversations.fence, logger: logger)
            try await writer.start()
            conversations.attach(writer)
        }
        let watch = ExchangeWatch(exchange: configuration.amqp.exchange, open: { try await primary.openChannel() }, logger: logger)
        let publisher = Publisher(channel: publishChannel, reopen: {
                                      let channel = try await primary.openChannel()
                                      try await channel.confirmSelect()
                                      return channel
                                  }, exchange: configuration.amqp.exchange, metrics: metrics,
                                  logger: logger, blockedReason: { primary.blockedReason }, closedByBroker: { watch.channelClosed($0) })
        if let conversations {
            let queue = conversations.settings.queue
            conversations.fence.attach { [publisher] id in try await publisher.publishFence(id, queue: queue) }
        }
        // A channel of the node's own: its presence queue is exclusive to this connection. With
        // presence off the queue still carries poll sessions' deletions and forwarded acks.
        let presence = Presence(node: nodeID, settings: configuration.presence,
                                exchange: PresenceSettings.exchange(for: configuration.amqp.exchange),
                                channel: try await primary.openChannel(), reopen: { try await primary.openChannel() },
                                publisher: publisher, loop: primary.eventLoop, metrics: metrics, logger: logger,
                                blockedReason: { primary.blockedReason })
        try await presence.start()
        let runtime = BridgeRuntime(channels: pool, publisher: publisher,
                                    hub: hub, exchange: configuration.amqp.exchange, limits: configuration.limits,
                                    inbox: configuration.inbox, policy: configuration.acl, metrics: metrics, conversations: conversations,
                                    presence: presence, exchangeWatch: watch, logger: logger)
        watch.start { [weak runtime] in await runtime?.restoreBindings() ?? "nothing (shutting down)" }
        return runtime
    }

    /// Binds again everything this node knows to be bound to the exchange — the live queue's
    /// keys, the store's queue, the inboxes open here — after the exchange was declared again;
    /// describes what it did.
    func restoreBindings() async -> String {
        let live = await hub.restoreBindings()
        let store = await conversations?.restoreBindings() ?? 0
        var inboxBindings = 0
        let open = inboxes.all
        for inbox in open { inboxBindings += await inbox.restoreBindings() }
        return "live queue \(live), store \(store), \(open.count) inboxes \(inboxBindings)"
    }

    /// A user's inbox, declared; it consumes once the session starts it.
    func openInbox(user: String, device: String, receiver: any InboxReceiver, near loop: (any EventLoop)?) async throws -> InboxConsumer {
        let consumer = InboxConsumer(channels: channels, queue: InboxSettings.queueName(user: user, device: device),
                                     exchange: exchange, settings: inbox, metrics: metrics, receiver: receiver, loop: loop,
                                     registry: inboxes, sizeGuard: hub.sizeGuard, logger: logger)
        try await consumer.declare()
        inboxes.insert(consumer)
        return consumer
    }
}
