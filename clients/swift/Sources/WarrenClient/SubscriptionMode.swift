/// What a subscription is backed by (docs/protocol.md).
public enum SubscriptionMode: String, Sendable, Hashable {
    /// At most once: nothing is kept while the client is away.
    case live
    /// At least once: the user's durable inbox queue; a delivery is removed once acknowledged.
    case inbox
}
