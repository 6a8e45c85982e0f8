/// One kept envelope: the columns the store queries by, and the envelope's bytes as published.
public struct StoredMessage: Sendable, Equatable {
    /// The envelope id (a UUIDv7: ordering by id is ordering by acceptance time).
    public var id: String
    public var route: String
    /// The envelope's `from`.
    public var sender: String
    public var type: String
    /// Accepted at (Unix ms).
    public var ts: Int64
    /// The encoded envelope (JSON), handed back unchanged in history.
    public var envelope: String

    public init(id: String, route: String, sender: String, type: String, ts: Int64, envelope: String) {
        self.id = id
        self.route = route
        self.sender = sender
        self.type = type
        self.ts = ts
        self.envelope = envelope
    }

    /// The users a message makes the route a conversation of: every word of the route, and the sender.
    public var participants: [String] {
        var users = route.split(separator: ".").map(String.init)
        if !users.contains(sender) { users.append(sender) }
        return users
    }
}

/// A page of history: oldest first, and whether older messages exist.
public struct HistoryPage: Sendable, Equatable {
    public var messages: [StoredMessage]
    public var more: Bool

    public init(messages: [StoredMessage], more: Bool) {
        self.messages = messages
        self.more = more
    }
}

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
