/// A poll session's polls on this node: how many are being served, and when they began and
/// ended. A pure value, kept by ``PollOutput`` under its lock and read by ``PollSession``.
struct PollActivity: Sendable {
    /// Polls being served now.
    var polls = 0
    /// When the last poll here ended (or the session was opened), ms.
    var lastSeen: Int64
    /// When the last poll here began (or the session was opened), ms.
    var lastStarted: Int64
    var ended = false
    /// Taken out of the node's table (ended, or about to be).
    var removed = false

    init(now: Int64) {
        lastSeen = now
        lastStarted = now
    }

    /// A poll starts; false if the session has ended. `listed`: and only while it is in the
    /// node's table.
    mutating func start(now: Int64, listed: Bool = false) -> Bool {
        guard !ended, !(listed && removed) else { return false }
        polls += 1
        lastStarted = now
        return true
    }

    mutating func end(now: Int64) {
        polls -= 1
        lastSeen = now
    }
}
