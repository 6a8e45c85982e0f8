/// A poll session as served on this node: the same ``ClientSession`` a WebSocket has (its
/// subscriptions, ACL, limits, live fan-out and inbox acks), behind a ``PollOutput``.
final class PollSession: Sendable {
    let descriptor: PollSessionDescriptor
    /// The session string it was opened with (a later poll with the same string needs no new
    /// signature check).
    let token: String
    /// The access policy of the poll that opened it here (its rules are the client's).
    let policy: AccessPolicy
    let client: ClientSession
    let output: PollOutput
    /// The node's id, for its answers' cursors, in storage of the session's own: every poll
    /// and answer holds it for a moment, and a node id longer than 15 bytes (a host name) is
    /// a heap string, one object for the whole node, whose reference count every poll on every
    /// event loop would write.
    let node: String

    init(descriptor: PollSessionDescriptor, token: String, policy: AccessPolicy, client: ClientSession, output: PollOutput,
         node: String) {
        self.descriptor = descriptor
        self.token = token
        self.policy = policy
        self.client = client
        self.output = output
        self.node = String(decoding: Array(node.utf8), as: UTF8.self)
        self.hasInbox = descriptor.subscriptions.contains { $0.mode == SubscriptionMode.inbox.rawValue }
    }

    /// One of its subscriptions is an inbox (asked at every poll: kept, not searched for).
    let hasInbox: Bool

    /// A poll starts here; false if the session has ended meanwhile. `listed`: and only while
    /// it is in the node's table (for a session a connection kept from its last poll, which
    /// did not look it up there).
    func pollStarted(now: Int64 = WallClock.milliseconds(), listed: Bool = false) -> Bool {
        output.withActivity { $0.start(now: now, listed: listed) }
    }

    func pollEnded(now: Int64) {
        output.withActivity { $0.end(now: now) }
    }

    /// How long nobody has polled here (0 while a poll is being served), in ms.
    func idle(now: Int64) -> Int64 {
        output.withActivity { a in a.polls > 0 ? 0 : now - a.lastSeen }
    }

    /// Whether no poll is served here now and none began here since `time` (Unix ms): its
    /// client polled another node then, and has not come back.
    func away(since time: Int64) -> Bool {
        output.withActivity { a in a.polls == 0 && a.lastStarted < time }
    }

    /// Taken out of the node's table of open sessions; called under that table's lock, so a
    /// connection that kept the session from its last poll (``PollService/LastPolled``) looks it
    /// up again instead of serving it.
    func markRemoved() {
        output.withActivity { $0.removed = true }
    }

    /// Marks the session ended; true the first time.
    func markEnded() -> Bool {
        output.withActivity { a in
            defer { a.ended = true }
            return !a.ended
        }
    }
}
