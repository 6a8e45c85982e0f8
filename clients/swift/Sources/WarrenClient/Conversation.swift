/// One of the user's conversations (docs/protocol.md).
public struct Conversation: Sendable, Decodable {
    public let route: String
    public let last: Envelope
    public let unread: Int
    /// The user's read marker.
    public let read: String?
}
