/// A subscription's delivery guarantee (docs/protocol.md).
public enum SubscriptionMode: String, Sendable, Hashable, CaseIterable {
    /// At most once, from the node's live queue; nothing kept while away.
    case live
    /// At least once, from the user's durable per-device inbox queue.
    case inbox
}
