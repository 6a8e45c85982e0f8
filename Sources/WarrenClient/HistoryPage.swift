/// A page of a conversation's history (DESIGN §10).
public struct HistoryPage: Sendable, Decodable {
    public let route: String
    /// Oldest first.
    public let messages: [Envelope]
    /// Older messages remain.
    public let more: Bool
}
