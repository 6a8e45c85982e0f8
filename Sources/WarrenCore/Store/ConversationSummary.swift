/// One entry of a user's conversation list.
public struct ConversationSummary: Sendable, Equatable {
    public var route: String
    /// The newest kept message.
    public var last: StoredMessage
    /// Kept messages after the user's read marker, not from the user, of counted types.
    public var unread: Int
    /// The user's read marker, if any.
    public var read: String?

    public init(route: String, last: StoredMessage, unread: Int, read: String?) {
        self.route = route
        self.last = last
        self.unread = unread
        self.read = read
    }
}
