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
