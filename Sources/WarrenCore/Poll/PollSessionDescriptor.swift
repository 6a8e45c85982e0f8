/// What a session token carries, so that any node can serve any session.
public struct PollSessionDescriptor: Sendable, Equatable {
    /// Random: tells sessions apart (and a deleted one from a new one).
    public var id: String
    public var user: String
    public var device: String
    public var subscriptions: [PollSubscription]
}
