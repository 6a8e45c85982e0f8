import AMQPClient

/// Settings for per-user inbox queues (docs/protocol.md, `inbox`).
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
    /// Seconds a client may hold a delivery unacknowledged; then it is handed back to RabbitMQ
    /// and delivered again, marked redelivered. Below RabbitMQ's `consumer_timeout` (30 min by
    /// default), which would otherwise close the channel this consumer shares with others.
    public var ackTimeout: Int = 300

    public init() {}

    public var arguments: FieldTable {
        QueueArguments.typed(queueType).merging(["x-expires": .int64(Int64(expiresMilliseconds)), "x-max-length": .int64(Int64(maxLength)),
                                                 "x-overflow": .string(overflow)]) { typed, _ in typed }
    }

    public static func queueName(user: String, device: String) -> String { "warren.inbox.\(user).\(device)" }
}
