/// One subscription of a poll session.
public struct PollSubscription: Sendable, Equatable, Codable {
    public var id: String
    public var pattern: String
    public var mode: String
    /// Announce the user on the route (docs/protocol.md); absent in sessions made before presence.
    public var presence: Bool?

    public init(id: String, pattern: String, mode: String, presence: Bool? = nil) {
        self.id = id
        self.pattern = pattern
        self.mode = mode
        self.presence = presence
    }
}
