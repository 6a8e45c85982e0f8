/// Maps routing keys to the local subscriptions whose patterns match them.
///
/// A trie over pattern words with `*` and `#` edges. Matching a key visits only
/// the nodes on paths the key can follow, so its cost depends on the key and
/// on the patterns that share its words, not on how many unrelated patterns
/// are subscribed. Each distinct pattern is one terminal node holding its
/// subscribers; a match returns each pattern once even when several paths
/// reach it (`#.#`).
///
/// Not thread-safe: owned by one event loop or behind one lock.
public final class TopicTrie<Subscriber: Hashable> {
    final class Node {
        var children: [Substring: Node] = [:]
        var star: Node?
        var hash: Node?
        /// Set when a pattern ends here.
        var pattern: String?
        var subscribers: Set<Subscriber> = []
        /// Dedups terminal nodes and (node, position) visits within one match.
        var stamp: UInt64 = 0
        var visitedPositions: UInt32 = 0
        var isEmpty: Bool { children.isEmpty && star == nil && hash == nil && subscribers.isEmpty }
    }

    private let root = Node()
    private var generation: UInt64 = 0
    private var counts: [String: Int] = [:]

    public init() {}

    /// How many distinct patterns have at least one subscriber.
    public var patternCount: Int { counts.count }

    /// The distinct patterns that have at least one subscriber.
    public var patterns: [String] { Array(counts.keys) }

    /// The subscribers of one pattern.
    public func subscribers(of pattern: TopicPattern) -> Set<Subscriber> {
        find(pattern)?.subscribers ?? []
    }

    /// Adds a subscriber to a pattern; true when it is the pattern's first subscriber
    /// (the caller binds the pattern on the broker then).
    @discardableResult
    public func insert(_ pattern: TopicPattern, _ subscriber: Subscriber) -> Bool {
        var node = root
        for word in pattern.words {
            switch word {
            case .literal(let w):
                if let next = node.children[w] { node = next } else {
                    let next = Node()
                    node.children[w] = next
                    node = next
                }
            case .star:
                if node.star == nil { node.star = Node() }
                node = node.star!
            case .hash:
                if node.hash == nil { node.hash = Node() }
                node = node.hash!
            }
        }
        node.pattern = pattern.value
        guard node.subscribers.insert(subscriber).inserted else { return false }
        let before = counts[pattern.value, default: 0]
        counts[pattern.value] = before + 1
        return before == 0
    }

    /// Removes a subscriber; true when the pattern has no subscriber left
    /// (the caller unbinds it on the broker then).
    @discardableResult
    public func remove(_ pattern: TopicPattern, _ subscriber: Subscriber) -> Bool {
        guard let path = walk(pattern), let node = path.last?.child else { return false }
        guard node.subscribers.remove(subscriber) != nil else { return false }
        let left = counts[pattern.value, default: 1] - 1
        counts[pattern.value] = left == 0 ? nil : left
        // Prune empty nodes so memory follows the live patterns.
        for step in path.reversed() where step.child.isEmpty {
            switch step.word {
            case .literal(let w): step.parent.children[w] = nil
            case .star: step.parent.star = nil
            case .hash: step.parent.hash = nil
            }
        }
        return left == 0
    }

    /// Calls `body` once for each pattern matching `key`, with that pattern's subscribers.
    public func forEachMatch(_ key: RouteKey, _ body: (_ pattern: String, _ subscribers: Set<Subscriber>) -> Void) {
        generation &+= 1
        visit(root, key.words, 0, body)
    }

    /// The subscribers of every pattern matching `key`.
    public func match(_ key: RouteKey) -> Set<Subscriber> {
        var result = Set<Subscriber>()
        forEachMatch(key) { _, subs in result.formUnion(subs) }
        return result
    }

    private func visit(_ node: Node, _ words: [Substring], _ i: Int,
                       _ body: (String, Set<Subscriber>) -> Void) {
        // A (node, position) pair is explored once per match: `#` paths would otherwise repeat work.
        if node.stamp != generation {
            node.stamp = generation
            node.visitedPositions = 0
        }
        let bit: UInt32 = 1 << UInt32(i)
        if node.visitedPositions & bit != 0 { return }
        node.visitedPositions |= bit

        if i == words.count {
            if node.pattern != nil, !node.subscribers.isEmpty, node.visitedPositions & (1 << 31) == 0 {
                node.visitedPositions |= 1 << 31
                body(node.pattern!, node.subscribers)
            }
        } else {
            if let next = node.children[words[i]] { visit(next, words, i + 1, body) }
            if let star = node.star { visit(star, words, i + 1, body) }
        }
        if let hash = node.hash {
            // `#` swallows zero or more of the remaining words.
            for k in i...words.count { visit(hash, words, k, body) }
        }
    }

    private func find(_ pattern: TopicPattern) -> Node? {
        pattern.words.isEmpty ? root : walk(pattern)?.last?.child
    }

    /// The existing nodes along a pattern's words, or nil where the path breaks off.
    private func walk(_ pattern: TopicPattern) -> [(parent: Node, word: TopicPattern.Word, child: Node)]? {
        var path: [(parent: Node, word: TopicPattern.Word, child: Node)] = []
        var node = root
        for word in pattern.words {
            let next: Node?
            switch word {
            case .literal(let w): next = node.children[w]
            case .star: next = node.star
            case .hash: next = node.hash
            }
            guard let next else { return nil }
            path.append((node, word, next))
            node = next
        }
        return path
    }
}

/// The trie is a plain class with no internal locking; it may cross threads only
/// inside a lock (``LiveHub`` keeps it in a `NIOLockedValueBox`).
extension TopicTrie: @unchecked Sendable where Subscriber: Sendable {}
