/// Who is present where, as this node knows it (docs/protocol.md): a pure value, events in,
/// what to publish out; no I/O and no clock of its own (times are handed in).
///
/// Local presence is counted per user and route (a user may hold several presence
/// subscriptions on one node); other nodes' presence is the last state each announced,
/// updated by their deltas, and forgotten when a node has not been heard from within the
/// timeout. A join or leave envelope is due when an entry appears or disappears cluster-wide:
/// the node where it changed publishes it; for a node that vanished, the live node with the
/// smallest id publishes its leaves (and if that node vanishes before it is heard from again,
/// the next smallest publishes them with its own). When a user's last entries on two nodes end at once, each
/// node believes the other still holds her and neither publishes: the leave each announces says
/// so, and the live node with the smallest id that hears such a leave and finds the entry
/// present nowhere publishes it (the others keep it owed by that node, as for a vanished node's
/// leaves). When a user arrives on one node as she leaves another, the
/// arriving node believes she is still there and publishes no join, and the leaving node
/// believes she is gone nowhere else and publishes the leave: the join it then hears, said
/// to be unpublished, it publishes itself.
public struct PresenceBook: Sendable {
    public let node: String
    public private(set) var local: [PresenceEntry: Int] = [:]
    /// Other nodes: what each has announced, and when it was last heard from (ms).
    public private(set) var remote: [String: (entries: Set<PresenceEntry>, seen: Int64)] = [:]
    /// The leaves this node published, and when (ms): an unpublished join from another node
    /// that crossed one of them is this node's to publish. Kept for the timeout.
    public private(set) var publishedLeaves: [PresenceEntry: Int64] = [:]
    /// Leaves that another, smaller node was to publish (a vanished node's, or ones two nodes
    /// left unpublished at once), with that node and when (ms): published here if that node
    /// vanishes too before it is heard from again ``takeoverGrace`` later (by then it has
    /// published them).
    public private(set) var owedByOthers: [PresenceEntry: (by: String, since: Int64)] = [:]
    /// How long after this node gave a vanished node's leaves to another node a word from that
    /// node shows it was alive to publish them (nodes expire on their own one-second ticks).
    public static let takeoverGrace: Int64 = 2_000

    public init(node: String) { self.node = node }

    /// A presence envelope to publish.
    public enum Change: Sendable, Equatable {
        case join(PresenceEntry)
        case leave(PresenceEntry)
    }

    /// What a local change asks for: an announcement to the other nodes, and maybe an envelope.
    public struct Outcome: Sendable, Equatable {
        /// This node's presence for the entry changed (0 → 1 or 1 → 0): tell the other nodes.
        public var announce: Bool
        public var publish: Change?
    }

    /// Whether any other node has the entry.
    func elsewhere(_ entry: PresenceEntry) -> Bool { remote.values.contains { $0.entries.contains(entry) } }

    public mutating func localJoined(_ entry: PresenceEntry) -> Outcome {
        let count = local[entry, default: 0]
        local[entry] = count + 1
        guard count == 0 else { return Outcome(announce: false, publish: nil) }
        publishedLeaves[entry] = nil
        owedByOthers[entry] = nil
        return Outcome(announce: true, publish: elsewhere(entry) ? nil : .join(entry))
    }

    /// `now` (ms) dates a leave this node publishes.
    public mutating func localLeft(_ entry: PresenceEntry, at now: Int64 = 0) -> Outcome {
        guard let count = local[entry] else { return Outcome(announce: false, publish: nil) }
        if count > 1 {
            local[entry] = count - 1
            return Outcome(announce: false, publish: nil)
        }
        local[entry] = nil
        guard !elsewhere(entry) else { return Outcome(announce: true, publish: nil) }
        publishedLeaves[entry] = now
        return Outcome(announce: true, publish: .leave(entry))
    }

    /// Everything this node holds (what it announces periodically).
    public var localEntries: Set<PresenceEntry> { Set(local.keys) }

    /// Another node's whole state.
    public mutating func received(state entries: Set<PresenceEntry>, from other: String, at now: Int64) {
        guard other != node else { return }
        remote[other] = (entries, now)
        heard(from: other, at: now)
    }

    /// A word from `other`: the leaves it was to publish are its own once it is heard from after
    /// the grace.
    private mutating func heard(from other: String, at now: Int64) {
        guard !owedByOthers.isEmpty else { return }
        owedByOthers = owedByOthers.filter { $0.value.by != other || now - $0.value.since < Self.takeoverGrace }
    }

    /// Another node's single change; `wasPublished` is whether that node published its envelope.
    /// Returns the envelope this node owes: a leave the other node did not publish, for an entry
    /// now present nowhere, when this node has the smallest id among the nodes it knows; or a
    /// join the other node did not publish because this node still had the entry when it
    /// arrived, though this node has since published its leave.
    @discardableResult
    public mutating func received(_ entry: PresenceEntry, present: Bool, published wasPublished: Bool = true, from other: String,
                                  at now: Int64) -> Change? {
        guard other != node else { return nil }
        var known = remote[other] ?? ([], now)
        if present { known.entries.insert(entry) } else { known.entries.remove(entry) }
        known.seen = now
        remote[other] = known
        heard(from: other, at: now)
        if present {
            owedByOthers[entry] = nil
            guard publishedLeaves.removeValue(forKey: entry) != nil, !wasPublished, local[entry] == nil else { return nil }
            return .join(entry)
        }
        guard !wasPublished, local[entry] == nil, !elsewhere(entry) else { return nil }
        // The smallest node publishes it; another keeps it owed by that node, in case that node
        // vanishes before it is heard from again (its leaves are then published with its own).
        if let smallest = remote.keys.min(), smallest < node {
            owedByOthers[entry] = (smallest, now)
            return nil
        }
        publishedLeaves[entry] = now
        return .leave(entry)
    }

    /// Another node said goodbye (it drained; its users' leaves were published as they left).
    public mutating func receivedGoodbye(from other: String) {
        remote[other] = nil
        // A node that drains has stayed alive past any leaves it was to publish.
        owedByOthers = owedByOthers.filter { $0.value.by != other }
    }

    /// Forgets nodes not heard from since `now - timeout`; returns the leaves this node must
    /// publish for them (entries present nowhere else, when this node has the smallest id among
    /// the nodes still alive).
    public mutating func expire(now: Int64, timeout: Int64) -> [Change] {
        publishedLeaves = publishedLeaves.filter { now - $0.value <= timeout }
        let gone = remote.filter { now - $0.value.seen > timeout }
        guard !gone.isEmpty else { return [] }
        for name in gone.keys { remote[name] = nil }
        var leaves = Set<PresenceEntry>()
        for (_, state) in gone {
            for entry in state.entries where local[entry] == nil && !elsewhere(entry) { leaves.insert(entry) }
        }
        // Leaves a node that is gone now was to publish for an earlier one, and may not have.
        for (entry, owed) in owedByOthers where gone[owed.by] != nil {
            owedByOthers[entry] = nil
            if local[entry] == nil && !elsewhere(entry) { leaves.insert(entry) }
        }
        guard let smallest = remote.keys.min(), smallest < node else {
            for entry in leaves { publishedLeaves[entry] = now }
            return leaves.sorted().map { .leave($0) }
        }
        for entry in leaves { owedByOthers[entry] = (smallest, now) }
        return []
    }

    /// The users present on `route`, on every node known, sorted.
    public func users(route: String) -> [String] {
        var users = Set(local.keys.filter { $0.route == route }.map(\.user))
        for state in remote.values { for e in state.entries where e.route == route { users.insert(e.user) } }
        return users.sorted()
    }

    /// Every entry present anywhere (each once).
    public var allEntries: Set<PresenceEntry> {
        var all = localEntries
        for state in remote.values { all.formUnion(state.entries) }
        return all
    }
}
