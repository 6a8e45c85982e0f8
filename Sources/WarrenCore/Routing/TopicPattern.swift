/// A topic pattern: words as in a route, or `*` (exactly one word) or `#` (zero or more).
public struct TopicPattern: Sendable, Hashable, CustomStringConvertible {
    public enum Word: Sendable, Hashable {
        case literal(Substring)
        case star
        case hash
    }

    public let value: String
    public let words: [Word]

    public init(_ value: String) throws(RouteError) {
        self.value = value
        self.words = try RouteKey.split(value, allowWildcards: true).map { w in
            w == "*" ? .star : w == "#" ? .hash : .literal(w)
        }
    }

    public var description: String { value }

    /// Whether the pattern matches `key` (AMQP topic semantics).
    public func matches(_ key: RouteKey) -> Bool {
        matches(validKey: key.value)
    }

    /// Whether every key this pattern matches is also matched by `other`.
    public func isContained(in other: TopicPattern) -> Bool {
        // Checked for every subscription: the common cases without building automata (the
        // product construction was ~4 % of Warren's CPU while sockets connected and subscribed).
        if other.value == "#" || other.value == value { return true }
        // No wildcard: the pattern names one key, contained when `other` matches that key.
        if !words.contains(where: { $0 == .star || $0 == .hash }) { return other.matches(validKey: value) }
        return PatternContainment.isContained(self, in: other)
    }
}
