/// What one poll answers (docs/protocol.md): up to `max` buffered deliveries, the cursor that acks
/// them, and whether the session still held more when they were taken (`"more":true` in the
/// answer: a client that must have everything, such as one draining a session it leaves, polls
/// again at once).
public struct PollAnswer: Sendable {
    public var messages: [PollItem]
    /// The node that made the answer (a node id: a word), and the answer's number there.
    public var node: String
    public var sequence: UInt64
    public var more: Bool

    /// `<node>.<sequence>`: acks what this answer, and those before it on its node, delivered.
    /// Made only when asked for: the poll path writes the answer's JSON from `node` and
    /// `sequence` (a cursor string per answer was ~1 % of Warren's samples in the poll benchmark).
    public var cursor: String { "\(node).\(sequence)" }

    public init(messages: [PollItem], node: String, sequence: UInt64, more: Bool = false) {
        self.messages = messages
        self.node = node
        self.sequence = sequence
        self.more = more
    }
}
