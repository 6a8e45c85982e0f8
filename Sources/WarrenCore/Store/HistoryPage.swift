/// A page of history: oldest first, and whether older messages exist.
public struct HistoryPage: Sendable, Equatable {
    public var messages: [StoredMessage]
    public var more: Bool

    public init(messages: [StoredMessage], more: Bool) {
        self.messages = messages
        self.more = more
    }
}
