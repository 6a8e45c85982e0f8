/// What a subscription's answer says once it is in effect (docs/protocol.md): how its `since`
/// went, and where it starts.
public struct SubscriptionStart: Sendable, Equatable {
    /// How the `since` went; nil without one.
    public var recovery: Recovery?
    /// A live subscription's start, as a message id of that moment (a UUIDv7 of Warren's
    /// clock): a client that got no message before it reconnects resubscribes `since` this,
    /// and misses nothing said meanwhile. Nil for an inbox (its queue keeps what it misses).
    public var at: String?

    public init(recovery: Recovery? = nil, at: String? = nil) {
        self.recovery = recovery
        self.at = at
    }
}
