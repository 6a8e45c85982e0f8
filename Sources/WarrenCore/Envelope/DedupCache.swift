/// Remembers the ids given to a `(from, cid)` send for a while, so that a client
/// retrying a send it never saw acknowledged gets the first ids back instead of a
/// second publish (docs/protocol.md).
///
/// Bounded: when full, the oldest entries go first. A value type; the owner
/// serialises access.
public struct DedupCache: Sendable {
    /// What is remembered of an earlier send with a `(from, cid)`.
    public enum Earlier: Sendable, Equatable {
        /// Confirmed: its ids, handed back instead of a second publish.
        case confirmed([String])
        /// Not confirmed (nacked, timed out, the broker link lost): the id each route was given,
        /// given again when the client retries. What of it did reach a queue (a message routed
        /// to several queues is nacked when one refuses it: a full inbox under
        /// `overflow = "reject-publish"`) then comes again as the same message, which the store
        /// keeps once and clients and inboxes recognise, instead of as a new one each retry.
        case attempted([String: String])
    }

    public let ttlMilliseconds: Int64
    public let capacity: Int
    private var entries: [String: (earlier: Earlier, expires: Int64)] = [:]
    private var order: [(key: String, expires: Int64)] = []
    private var head = 0

    public init(ttlMilliseconds: Int64 = 5 * 60 * 1000, capacity: Int = 100_000) {
        self.ttlMilliseconds = ttlMilliseconds
        self.capacity = capacity
    }

    public var count: Int { entries.count }

    static func key(from: String, cid: String) -> String { from + "\u{0}" + cid }

    /// An earlier send with this `(from, cid)`, if it is still remembered.
    public mutating func earlier(from: String, cid: String, nowMilliseconds: Int64) -> Earlier? {
        expire(nowMilliseconds)
        guard let e = entries[Self.key(from: from, cid: cid)], e.expires > nowMilliseconds else { return nil }
        return e.earlier
    }

    /// The ids of an earlier confirmed send with this `(from, cid)`, if it is still remembered.
    public mutating func lookup(from: String, cid: String, nowMilliseconds: Int64) -> [String]? {
        if case .confirmed(let ids)? = earlier(from: from, cid: cid, nowMilliseconds: nowMilliseconds) { return ids }
        return nil
    }

    /// A confirmed send.
    public mutating func remember(from: String, cid: String, ids: [String], nowMilliseconds: Int64) {
        store(.confirmed(ids), key: Self.key(from: from, cid: cid), nowMilliseconds)
    }

    /// A send another node confirmed (its retry may come here: a balancer without stickiness),
    /// unless this node confirmed one of its own.
    public mutating func rememberElsewhere(from: String, cid: String, ids: [String], nowMilliseconds: Int64) {
        let key = Self.key(from: from, cid: cid)
        if case .confirmed? = entries[key]?.earlier { return }
        store(.confirmed(ids), key: key, nowMilliseconds)
    }

    /// A send another node is writing, not yet confirmed there (it may never be: the node can
    /// die first): a retry here is published with its ids, unless anything is remembered already.
    public mutating func rememberAttemptElsewhere(from: String, cid: String, routes: [String], ids: [String], nowMilliseconds: Int64) {
        guard earlier(from: from, cid: cid, nowMilliseconds: nowMilliseconds) == nil else { return }
        store(.attempted(Dictionary(zip(routes, ids)) { first, _ in first }), key: Self.key(from: from, cid: cid), nowMilliseconds)
    }

    /// A send that was not confirmed: the id given to each of its routes (unless a confirmed
    /// one is remembered).
    public mutating func rememberAttempt(from: String, cid: String, routes: [String], ids: [String], nowMilliseconds: Int64) {
        let key = Self.key(from: from, cid: cid)
        if case .confirmed? = entries[key]?.earlier { return }
        store(.attempted(Dictionary(zip(routes, ids)) { first, _ in first }), key: key, nowMilliseconds)
    }

    /// Every send still remembered, oldest first (handed to a node that starts: ``RecentSend``).
    public mutating func recent(nowMilliseconds: Int64) -> [RecentSend] {
        expire(nowMilliseconds)
        return order[head...].compactMap { item -> RecentSend? in
            guard let e = entries[item.key], e.expires > nowMilliseconds, let split = item.key.utf8.firstIndex(of: 0) else { return nil }
            let from = String(item.key[..<split])
            let cid = String(item.key[item.key.utf8.index(after: split)...])
            return RecentSend(from: from, cid: cid, earlier: e.earlier)
        }
    }

    /// Sends another node remembered, handed over as this node started or first heard of it:
    /// each taken where nothing is remembered here (a send this node saw stays as it saw it).
    public mutating func rememberFromPeer(_ sends: [RecentSend], nowMilliseconds: Int64) {
        for send in sends where earlier(from: send.from, cid: send.cid, nowMilliseconds: nowMilliseconds) == nil {
            store(send.earlier, key: Self.key(from: send.from, cid: send.cid), nowMilliseconds)
        }
    }

    private mutating func store(_ earlier: Earlier, key: String, _ nowMilliseconds: Int64) {
        expire(nowMilliseconds)
        let expires = nowMilliseconds + ttlMilliseconds
        if entries[key] == nil {
            while entries.count >= capacity, head < order.count {
                entries[order[head].key] = nil
                head += 1
            }
            order.append((key, expires))
        }
        entries[key] = (earlier, entries[key]?.expires ?? expires)
    }

    private mutating func expire(_ now: Int64) {
        while head < order.count, order[head].expires <= now {
            let key = order[head].key
            if let e = entries[key], e.expires <= now { entries[key] = nil }
            head += 1
        }
        if head > 1024, head * 2 > order.count {
            order.removeFirst(head)
            head = 0
        }
    }
}
