/// What a poll session holds on one node between polls: deliveries waiting for the next
/// answer, and the inbox deliveries answers handed out, leased under cursors.
///
/// A pure value (events in, results out), unit-tested without I/O; ``PollOutput`` keeps it
/// under a lock and parks the long-poll waiting on it.
public struct PollBuffer: Sendable {
    /// Live deliveries kept at most (`poll.max_length`); past it the oldest live one goes
    /// (live is at most once). Inbox deliveries are bounded by the inbox prefetch instead.
    public let maxLength: Int
    private var items: [PollItem] = []
    private var head = 0
    private var live = 0
    private var leases: [UInt64: Lease] = [:]
    private var nextLease: UInt64 = 1
    /// The last answer made here before each poll that came with another node's cursor
    /// (``polledFromElsewhere()``), ascending, while a lease made by then is outstanding.
    private var departures: [UInt64] = []
    /// The inbox was resumed for the poll being served (``inboxResumed()``), until it is answered.
    private var resumedForPoll = false

    struct Lease: Sendable {
        var ids: [String]
        var issued: Int64
        var expires: Int64
    }

    public init(maxLength: Int) { self.maxLength = max(1, maxLength) }

    /// Deliveries waiting for an answer.
    public var count: Int { items.count - head }
    public var isEmpty: Bool { count == 0 }

    /// Adds a delivery; true when the oldest live one was dropped to make room.
    public mutating func add(_ item: PollItem) -> Bool {
        items.append(item)
        guard item.inboxID == nil else { return false }
        live += 1
        guard live > maxLength, let oldest = items[head...].firstIndex(where: { $0.inboxID == nil }) else { return false }
        items.remove(at: oldest)
        live -= 1
        return true
    }

    /// Up to `max` deliveries, oldest first; the rest wait for the next answer.
    /// `maxBytes` bounds their bytes in the answer too (the first is taken whatever its size), so
    /// an answer of big messages stays a few megabytes at most.
    public mutating func take(max: Int, maxBytes: Int = .max) -> [PollItem] {
        var n = 0
        var bytes = 0
        let limit = Swift.min(Swift.max(0, max), count)
        while n < limit {
            bytes += items[head + n].answerTailLength
            if n > 0, bytes > maxBytes { break }
            n += 1
        }
        resumedForPoll = false
        let taken = Array(items[head..<(head + n)])
        head += n
        live -= taken.lazy.filter { $0.inboxID == nil }.count
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024, head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return taken
    }

    /// Leases the inbox deliveries among `answered` until `now + duration` (ms) under a new
    /// cursor sequence number. Every answer gets one, with or without inbox deliveries.
    public mutating func lease(_ answered: [PollItem], now: Int64, duration: Int64) -> UInt64 {
        let seq = nextLease
        nextLease += 1
        let ids = answered.compactMap(\.inboxID)
        if !ids.isEmpty { leases[seq] = Lease(ids: ids, issued: now, expires: now + duration) }
        return seq
    }

    /// Acknowledges every lease up to `seq`: `acked`, the envelope ids to ack to RabbitMQ. An old
    /// or unknown `seq` acks what is still leased up to it, possibly nothing.
    ///
    /// Except a lease made before a poll came here with another node's cursor
    /// (``polledFromElsewhere()``) while `seq` came after that poll: the client read an answer
    /// of this node made after it had polled elsewhere, which says nothing of the answers made
    /// here before. One of those it read was acked from the node it polled next (its ack comes
    /// on from there, ``ack(upTo:)`` with that answer's own cursor); one still leased now never
    /// reached it: a long-poll parked here answered after the client had gone (the connection
    /// cut as it was answered; an HTTP stack that sent the poll again to another node). Before
    /// 2026-11-29 the later cursor acked it unseen, and the message was lost (seen with the
    /// Swift client on two nodes behind a proxy that cut connections). Those are `unread`:
    /// handed back to RabbitMQ, which delivers them again (a read one whose ack was still on its
    /// way comes again, marked redelivered: clients dedupe by id).
    public mutating func ack(upTo seq: UInt64) -> (acked: [String], unread: [String]) {
        let due = leases.keys.filter { $0 <= seq }.sorted()
        guard !due.isEmpty else { return ([], []) }
        var acked: [String] = [], unread: [String] = []
        for key in due {
            let ids = leases.removeValue(forKey: key)?.ids ?? []
            if departures.contains(where: { key <= $0 && $0 < seq }) { unread += ids } else { acked += ids }
        }
        forgetDepartures()
        return (acked, unread)
    }

    /// A poll came here with another node's cursor: the last answer the client read was made
    /// there. Marks the answers made here so far (see ``ack(upTo:)``), and returns the ids of the
    /// inbox deliveries waiting here, which the caller hands back to RabbitMQ: they came while
    /// the client read from the other node, which consumed the same inbox meanwhile (a node
    /// consumes a session's inbox until ``PollService/inboxIdleGrace`` after its last poll there),
    /// so later messages may have reached the client from there already. Answered, they came
    /// first-time and out of publish order (docs/protocol.md: inbox order is publish order, other
    /// only for redeliveries): seen in a soak whose poller moved nodes on each failed poll
    /// (2026-12-03). Handed back, they come again marked `redelivered`. Nothing goes back when
    /// the inbox was resumed for this very poll (``inboxResumed()``): what waits came since.
    public mutating func polledFromElsewhere() -> [String] {
        let last = nextLease - 1
        if departures.last != last, leases.keys.contains(where: { $0 <= last }) { departures.append(last) }
        defer { resumedForPoll = false }
        return resumedForPoll ? [] : removeWaitingInbox()
    }

    /// The node consumes the session's inbox again, for the poll being served: what waits in
    /// the buffer until that poll is answered came after it arrived.
    public mutating func inboxResumed() { resumedForPoll = true }

    /// Departures no outstanding lease is made before say nothing any more.
    private mutating func forgetDepartures() {
        guard !departures.isEmpty else { return }
        guard let oldest = leases.keys.min() else { return departures.removeAll() }
        departures.removeAll { $0 < oldest }
    }

    /// Hands back the leases after `seq`, which a poll acking `seq` says its client never got: it
    /// polls with the cursor of the last answer it read, so an answer made after that one was
    /// lost on the way (a connection cut as it was answered, an HTTP stack or proxy that sent the
    /// poll again). Acking a later cursor would ack those deliveries unseen; the envelope ids to
    /// hand back to RabbitMQ, which delivers them again. `before` (Unix ms): only leases made
    /// by then, when the poll arrived on another node and its ack came on from there (an
    /// answer made here meanwhile is one the client may have read since).
    public mutating func unreceived(after seq: UInt64, before: Int64 = .max) -> [String] {
        // Every poll asks: nothing built when, as almost always, no answer went missing.
        guard leases.contains(where: { $0.key > seq && $0.value.issued <= before }) else { return [] }
        let due = leases.filter { $0.key > seq && $0.value.issued <= before }.keys.sorted()
        defer { forgetDepartures() }
        return due.flatMap { leases.removeValue(forKey: $0)?.ids ?? [] }
    }

    /// Leases that ran out by `now`: the envelope ids to hand back to RabbitMQ.
    public mutating func expired(now: Int64) -> [String] {
        let due = leases.filter { $0.value.expires <= now }.keys.sorted()
        defer { if !due.isEmpty { forgetDepartures() } }
        return due.flatMap { leases.removeValue(forKey: $0)?.ids ?? [] }
    }

    /// Removes the inbox deliveries waiting for an answer (the node stops consuming the inbox
    /// and hands them back) and returns their ids.
    public mutating func removeWaitingInbox() -> [String] {
        let ids = items[head...].compactMap(\.inboxID)
        guard !ids.isEmpty else { return [] }
        items = items[head...].filter { $0.inboxID == nil }
        head = 0
        return ids
    }

    /// Envelope ids leased and not yet acked or expired.
    public var leasedIDs: Set<String> { Set(leases.values.flatMap(\.ids)) }

    /// Whether any lease is outstanding.
    public var hasLeases: Bool { !leases.isEmpty }
}
