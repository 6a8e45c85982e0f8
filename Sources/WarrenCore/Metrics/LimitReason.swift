/// Which configured limit a client ran into (`warren_limit_hits_total{frontend,reason}`).
public enum LimitReason: Int, CaseIterable, Sendable {
    case connections, subscriptions, publishRate, pendingPublishes, messageSize, frameSize, badFrames, slowConsumer, ackTimeout, devices, queryRate
    public var label: String {
        ["connections", "subscriptions", "publish_rate", "pending_publishes", "message_size", "frame_size", "bad_frames",
         "slow_consumer", "ack_timeout", "devices", "query_rate"][rawValue]
    }
}
