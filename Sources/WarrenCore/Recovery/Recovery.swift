/// What a recovery found: the kept messages a subscription missed, oldest first, and whether
/// they are everything it missed.
public struct Recovery: Sendable, Equatable {
    public var messages: [StoredMessage]
    /// Nil: every kept message since `since` the pattern matches is in ``messages``.
    public var failure: RecoveryReason?
    /// Store reads it took (for the figures: a wave of reconnects should cost few).
    public var queries: Int

    public init(messages: [StoredMessage] = [], failure: RecoveryReason? = nil, queries: Int = 0) {
        self.messages = messages
        self.failure = failure
        self.queries = queries
    }

    public var recovered: Bool { failure == nil }
}
