/// One kept envelope: the columns the store queries by, and the envelope's bytes as published.
public struct StoredMessage: Sendable, Equatable {
    /// The envelope id (a UUIDv7 when Warren accepted the message; any UUID an AMQP publisher chose).
    public var id: String
    public var route: String
    /// The envelope's `from`.
    public var sender: String
    public var type: String
    /// Accepted at (Unix ms).
    public var ts: Int64
    /// The encoded envelope (JSON), handed back unchanged in history.
    public var envelope: String
    /// Where it stands in its route's history (``SortKey``).
    public var sortKey: String

    public init(id: String, route: String, sender: String, type: String, ts: Int64, envelope: String, sortKey: String) {
        self.id = id
        self.route = route
        self.sender = sender
        self.type = type
        self.ts = ts
        self.envelope = envelope
        self.sortKey = sortKey
    }

    /// The users a message makes the route a conversation of: every word of the route, and the sender.
    public var participants: [String] {
        var users = route.split(separator: ".").map(String.init)
        if !users.contains(sender) { users.append(sender) }
        return users
    }
}
