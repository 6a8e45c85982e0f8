import NIOCore

/// The live fan-out's routing state, kept under one lock: each pattern's subscribers, and per
/// pattern the event loops its subscribers' deliveries are handed to (``LiveReceiver/liveLoop``),
/// each counted by the subscriptions that live on it. A message is handed only to the loops of
/// the patterns it matched: one poll session per key (a user's own inbox pattern) wakes its own
/// loop, not every loop of the node. Each pattern's subscribers without a loop (WebSockets,
/// delivered on the broker connection's loop) are counted too, so that a message only pollers
/// matched is not walked there as well.
struct LiveRoutes {
    let trie = TopicTrie<LiveSubscriber>()
    /// The loops of each pattern's subscribers (patterns whose subscribers all lack a loop are absent).
    private var loopsByPattern: [String: [(loop: any EventLoop, id: ObjectIdentifier, subscriptions: Int)]] = [:]
    /// How many of each pattern's subscribers have no loop (patterns without such are absent).
    private var looseByPattern: [String: Int] = [:]

    /// Adds a subscriber; true when it is the pattern's first (the caller binds it then).
    mutating func insert(_ pattern: TopicPattern, _ subscriber: LiveSubscriber) -> Bool {
        let isNew = !trie.subscribers(of: pattern).contains(subscriber)
        let first = trie.insert(pattern, subscriber)
        if isNew, let loop = subscriber.loop, let id = subscriber.loopID {
            var loops = loopsByPattern[pattern.value, default: []]
            if let k = loops.firstIndex(where: { $0.id == id }) {
                loops[k].subscriptions += 1
            } else {
                loops.append((loop, id, 1))
            }
            loopsByPattern[pattern.value] = loops
        } else if isNew {
            looseByPattern[pattern.value, default: 0] += 1
        }
        return first
    }

    /// Removes a subscriber; true when the pattern has none left (the caller unbinds it then).
    /// `subscriber` need not carry its receiver (sessions unsubscribe by session and id): its
    /// loop is the one it was added with.
    mutating func remove(_ pattern: TopicPattern, _ subscriber: LiveSubscriber) -> Bool {
        let subscribers = trie.subscribers(of: pattern)
        let added = subscribers.firstIndex(of: subscriber).map { subscribers[$0] }
        let last = trie.remove(pattern, subscriber)
        guard let added else { return last }
        if let id = added.loopID {
            if var loops = loopsByPattern[pattern.value], let k = loops.firstIndex(where: { $0.id == id }) {
                loops[k].subscriptions -= 1
                if loops[k].subscriptions == 0 { loops.remove(at: k) }
                loopsByPattern[pattern.value] = loops.isEmpty ? nil : loops
            }
        } else if let loose = looseByPattern[pattern.value] {
            looseByPattern[pattern.value] = loose > 1 ? loose - 1 : nil
        }
        return last
    }

    /// The subscriber sets of the patterns matching `key`, as the trie holds them, the loops
    /// their subscribers live on (each once), and whether any of them has no loop.
    func match(_ key: RouteKey) -> (sets: [Set<LiveSubscriber>], loops: [any EventLoop], loose: Bool) {
        var sets: [Set<LiveSubscriber>] = []
        var loops: [any EventLoop] = []
        var loose = false
        trie.forEachMatch(key) { pattern, subscribers in
            sets.append(subscribers)
            if !loose, looseByPattern[pattern] != nil { loose = true }
            for entry in loopsByPattern[pattern] ?? [] where !loops.contains(where: { ObjectIdentifier($0) == entry.id }) {
                loops.append(entry.loop)
            }
        }
        return (sets, loops, loose)
    }

    /// The loops with a subscriber of `pattern`.
    func loops(of pattern: TopicPattern) -> [ObjectIdentifier] {
        (loopsByPattern[pattern.value] ?? []).map(\.id)
    }
}
