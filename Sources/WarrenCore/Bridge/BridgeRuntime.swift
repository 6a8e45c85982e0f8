import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Per-client limits (DESIGN §4, `[limits]`).
public struct BridgeLimits: Sendable, Equatable {
    /// Largest encoded envelope (`too_large` above).
    public var maxMessageBytes: Int = 65_536
    /// Largest WebSocket frame (close 1009 above).
    public var maxFrameBytes: Int = 1 << 20
    /// Errors within a minute before the socket is closed with 1008.
    public var maxBadFrames: Int = 100
    /// Subscriptions one connection may hold.
    public var maxSubscriptions: Int = 100
    /// Bytes queued for one socket before it is closed with 4008 (slow consumer).
    public var outboundBufferBytes: Int = 1 << 20
    /// Publishes one connection may have awaiting confirms.
    public var maxPendingPublishes: Int = 256
    /// WebSockets plus held long-polls one user may have open on one node (0 = unlimited).
    public var maxConnectionsPerUser: Int = 100
    /// Publishes a second one user may make on one node, all frontends together (0 = unlimited).
    public var publishRate: Int = 100
    /// Publishes a user may make in a burst above the rate.
    public var publishBurst: Int = 200

    public init() {}
}

/// The running bridge once the broker link is up: the publisher, the live hub,
/// inbox access and the rules every session shares.
public final class BridgeRuntime: Sendable {
    public let connection: AMQPConnection
    public let publisher: Publisher
    public let hub: LiveHub
    public let exchange: String
    public let limits: BridgeLimits
    public let inbox: InboxSettings
    public let policy: AccessPolicy
    public let metrics: WarrenMetrics
    /// Per-user connection and publish-rate limits on this node.
    public let users: UserLimiter
    let logger: Logger
    private let slowConsumers = NIOLockedValueBox(0)

    /// Sockets closed with 4008 so far (exported as a metric by the operations work).
    public var slowConsumerCount: Int { slowConsumers.withLockedValue { $0 } }
    func countSlowConsumer(route: String?) {
        slowConsumers.withLockedValue { $0 += 1 }
        metrics.dropped(route, .slowConsumer)
        metrics.limitHit(.ws, .slowConsumer)
    }

    init(connection: AMQPConnection, publisher: Publisher, hub: LiveHub, exchange: String, limits: BridgeLimits,
         inbox: InboxSettings, policy: AccessPolicy, metrics: WarrenMetrics, logger: Logger) {
        self.metrics = metrics
        self.connection = connection
        self.publisher = publisher
        self.hub = hub
        self.exchange = exchange
        self.limits = limits
        self.inbox = inbox
        self.policy = policy
        self.users = UserLimiter(limits)
        self.logger = logger
    }

    /// The per-user publish rate, one token per route, for every frontend alike: nil when the
    /// publish may go on, else the error to answer (counted as a limit hit and a drop).
    public func admitPublish(_ request: PublishRequest, from user: String, via frontend: Frontend) -> ProtocolError? {
        guard !users.takePublishes(user, count: request.routes.count) else { return nil }
        metrics.limitHit(frontend, .publishRate)
        metrics.dropped(request.routes.first?.value, .rateLimited)
        return ProtocolError(.rateLimited, "publish rate limit: \(limits.publishRate) a second per user", ref: request.cid)
    }

    /// Sets up the publisher channel and the node's live queue on a connected link.
    public static func start(connection: AMQPConnection, configuration: BridgeConfiguration, nodeID: String,
                             metrics: WarrenMetrics, logger: Logger) async throws -> BridgeRuntime {
        let publishChannel = try await connection.openChannel()
        try await publishChannel.confirmSelect()
        let liveChannel = try await connection.openChannel()
        let hub = LiveHub(channel: liveChannel, bindChannel: try await connection.openChannel(), queue: "warren.live.\(nodeID)", exchange: configuration.amqp.exchange,
                          metrics: metrics, logger: logger)
        try await hub.start()
        return BridgeRuntime(connection: connection,
                             publisher: Publisher(channel: publishChannel, exchange: configuration.amqp.exchange, metrics: metrics,
                                                  logger: logger, blockedReason: { connection.blockedReason }),
                             hub: hub, exchange: configuration.amqp.exchange, limits: configuration.limits,
                             inbox: configuration.inbox, policy: configuration.acl, metrics: metrics, logger: logger)
    }

    /// Opens a user's inbox on a channel of its own.
    func openInbox(user: String, device: String, receiver: any InboxReceiver) async throws -> InboxConsumer {
        let channel = try await connection.openChannel()
        let consumer = InboxConsumer(channel: channel, queue: InboxSettings.queueName(user: user, device: device),
                                     exchange: exchange, settings: inbox, metrics: metrics, receiver: receiver)
        do {
            try await consumer.declare()
        } catch {
            try? await channel.close()
            throw error
        }
        return consumer
    }
}
