/// Remembers the ids given to a `(from, cid)` send for a while, so that a client
/// retrying a send it never saw acknowledged gets the first ids back instead of a
/// second publish (DESIGN §2).
///
/// Bounded: when full, the oldest entries go first. A value type; the owner
/// serialises access.
public struct DedupCache: Sendable {
    public let ttlMilliseconds: Int64
    public let capacity: Int
    private var entries: [String: (ids: [String], expires: Int64)] = [:]
    private var order: [(key: String, expires: Int64)] = []
    private var head = 0

    public init(ttlMilliseconds: Int64 = 5 * 60 * 1000, capacity: Int = 100_000) {
        self.ttlMilliseconds = ttlMilliseconds
        self.capacity = capacity
    }

    public var count: Int { entries.count }

    static func key(from: String, cid: String) -> String { from + "\u{0}" + cid }

    /// The ids of an earlier send with this `(from, cid)`, if it is still remembered.
    public mutating func lookup(from: String, cid: String, nowMilliseconds: Int64) -> [String]? {
        expire(nowMilliseconds)
        guard let e = entries[Self.key(from: from, cid: cid)], e.expires > nowMilliseconds else { return nil }
        return e.ids
    }

    public mutating func remember(from: String, cid: String, ids: [String], nowMilliseconds: Int64) {
        expire(nowMilliseconds)
        let key = Self.key(from: from, cid: cid)
        let expires = nowMilliseconds + ttlMilliseconds
        if entries[key] == nil {
            while entries.count >= capacity, head < order.count {
                entries[order[head].key] = nil
                head += 1
            }
            order.append((key, expires))
        }
        entries[key] = (ids, entries[key]?.expires ?? expires)
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
