/// Per-client limits (docs/protocol.md, `[limits]`).
public struct BridgeLimits: Sendable, Equatable {
    /// Largest encoded envelope (`too_large` above; from a plain AMQP publisher, handed to no
    /// client and not stored: ``EnvelopeSizeGuard``).
    public var maxMessageBytes: Int = 65_536
    /// The largest `maxMessageBytes` a node may be configured with.
    public static let largestMessageBytes = 16 << 20
    /// Largest WebSocket frame (close 1009 above).
    public var maxFrameBytes: Int = 1 << 20
    /// Errors within a minute before the socket is closed with 1008.
    public var maxBadFrames: Int = 100
    /// Subscriptions one connection may hold.
    public var maxSubscriptions: Int = 100
    /// Bytes queued for one socket above which it is closed with 4008 (slow consumer) once it
    /// has stayed there for `slowGraceSeconds`.
    public var outboundBufferBytes: Int = 1 << 20
    /// Bytes queued for one socket above which it is closed with 4008 at once (0: 16 ×
    /// `outboundBufferBytes`).
    public var outboundHardCapBytes: Int = 0
    /// Seconds a socket may stay over `outboundBufferBytes` while it reads (a burst it drains).
    public var slowGraceSeconds: Int = 10

    /// The hard cap in effect.
    public var effectiveHardCapBytes: Int {
        outboundHardCapBytes > 0 ? max(outboundHardCapBytes, outboundBufferBytes) : outboundBufferBytes * 16
    }
    /// Publishes one connection may have awaiting confirms.
    public var maxPendingPublishes: Int = 256
    /// WebSockets plus poll sessions one user may have open on one node (0 = unlimited). A poll
    /// session holds its slot from its opening on the node until it is deleted or dropped.
    public var maxConnectionsPerUser: Int = 100
    /// Inbox devices one user may use on one node within `inbox.expires_ms` of their last
    /// subscription (0 = unlimited): each names a durable queue the broker keeps (``DeviceBook``).
    public var maxDevicesPerUser: Int = 16
    /// Publishes a second one user may make on one node, all frontends together (0 = unlimited).
    public var publishRate: Int = 100
    /// Publishes a user may make in a burst above the rate.
    public var publishBurst: Int = 200
    /// Conversation-store requests a second one user may make on one node, both doors
    /// together (history, conversations, read): each is a database query (0 = unlimited).
    public var queryRate: Int = 20
    /// Store requests a user may make in a burst above the rate.
    public var queryBurst: Int = 40

    public init() {}
}
