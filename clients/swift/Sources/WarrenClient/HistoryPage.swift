/// A page of a conversation's history (docs/protocol.md).
public struct HistoryPage: Sendable, Decodable {
    public let route: String
    /// Oldest first.
    public let messages: [Envelope]
    /// Older messages remain.
    public let more: Bool
}
