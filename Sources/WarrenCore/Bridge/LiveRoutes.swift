import NIOCore

/// The live fan-out's routing state, kept under one lock: each pattern's subscribers, and the
/// event loops their deliveries are handed to (``LiveReceiver/liveLoop``), each counted by
/// the subscriptions that live on it, so a loop is handed a message's matches only while some
/// subscriber lives there.
struct LiveRoutes {
    let trie = TopicTrie<LiveSubscriber>()
    private var counts: [ObjectIdentifier: Int] = [:]
    /// The loops with at least one subscriber.
    private(set) var loops: [any EventLoop] = []

    /// Adds a subscriber; true when it is the pattern's first (the caller binds it then).
    mutating func insert(_ pattern: TopicPattern, _ subscriber: LiveSubscriber) -> Bool {
        let isNew = !trie.subscribers(of: pattern).contains(subscriber)
        let first = trie.insert(pattern, subscriber)
        if isNew, let loop = subscriber.loop, let id = subscriber.loopID {
            counts[id, default: 0] += 1
            if counts[id] == 1 { loops.append(loop) }
        }
        return first
    }

    /// Removes a subscriber; true when the pattern has none left (the caller unbinds it then).
    mutating func remove(_ pattern: TopicPattern, _ subscriber: LiveSubscriber) -> Bool {
        let wasThere = trie.subscribers(of: pattern).contains(subscriber)
        let last = trie.remove(pattern, subscriber)
        if wasThere, let id = subscriber.loopID, let n = counts[id] {
            if n > 1 {
                counts[id] = n - 1
            } else {
                counts[id] = nil
                loops.removeAll { ObjectIdentifier($0) == id }
            }
        }
        return last
    }
}
