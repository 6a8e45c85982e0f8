/// The order this node's presence announcements leave in (docs/protocol.md): each after the one
/// before it, and one that follows a presence envelope only once the broker has confirmed that
/// envelope — accepted by every queue it was routed to. A node that hears the announcement and
/// publishes an envelope in answer (her join on the node she moved to, after her leave here)
/// then cannot have its envelope reach a watcher's queue before this node's.
///
/// A pure value: the caller sends what it returns, in order, under the lock that holds it.
struct PresenceOutbox: Sendable {
    /// Announcements not yet sent, in order; `gate` names the envelope one waits for.
    private var waiting: [(message: PresenceAnnouncement, gate: Int?)] = []
    /// Envelopes confirmed (or failed) while announcements before them still waited.
    private var opened: Set<Int> = []
    private var nextGate = 0
    /// The node said goodbye: nothing more leaves.
    private var closed = false

    /// Adds an announcement; `gated`: it follows an envelope not yet confirmed, whose gate
    /// number is returned (to pass to ``confirmed(_:)``). Returns what can be sent now.
    mutating func add(_ message: PresenceAnnouncement, gated: Bool) -> (gate: Int?, send: [PresenceAnnouncement]) {
        guard !closed else { return (nil, []) }
        var gate: Int?
        if gated {
            gate = nextGate
            nextGate &+= 1
        }
        waiting.append((message, gate))
        return (gate, drain())
    }

    /// The envelope behind `gate` is confirmed, or failed: returns what can be sent now.
    mutating func confirmed(_ gate: Int) -> [PresenceAnnouncement] {
        guard !closed else { return [] }
        opened.insert(gate)
        return drain()
    }

    /// Says goodbye: returns it, to be sent at once, and drops whatever still waited (the other
    /// nodes forget this one's entries on hearing it; a change arriving after it would bring
    /// the node back to their books).
    mutating func close(goodbye: PresenceAnnouncement) -> [PresenceAnnouncement] {
        guard !closed else { return [] }
        closed = true
        waiting.removeAll()
        opened.removeAll()
        return [goodbye]
    }

    /// Announcements still waiting.
    var count: Int { waiting.count }

    private mutating func drain() -> [PresenceAnnouncement] {
        var ready = 0
        while ready < waiting.count {
            guard let gate = waiting[ready].gate else {
                ready += 1
                continue
            }
            guard opened.remove(gate) != nil else { break }
            ready += 1
        }
        guard ready > 0 else { return [] }
        let send = waiting[..<ready].map(\.message)
        waiting.removeFirst(ready)
        return send
    }
}
