/// What one poll answers (DESIGN §5): up to `max` buffered deliveries, the cursor that acks
/// them, and whether the session still held more when they were taken (`"more":true` in the
/// answer: a client that must have everything, such as one draining a session it leaves, polls
/// again at once).
public struct PollAnswer: Sendable {
    public var messages: [PollItem]
    public var cursor: String
    public var more: Bool

    public init(messages: [PollItem], cursor: String, more: Bool = false) {
        self.messages = messages
        self.cursor = cursor
        self.more = more
    }
}
