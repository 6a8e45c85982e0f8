/// Why a route or pattern was refused (the `bad_route` error's message).
public enum RouteError: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    case tooLong(bytes: Int)
    case tooManyWords(Int)
    case badWord(String)
    case wildcardInRoute

    public var description: String {
        switch self {
        case .empty: return "route is empty"
        case .tooLong(let n): return "route is \(n) bytes (max \(RouteKey.maxBytes))"
        case .tooManyWords(let n): return "route has \(n) words (max \(RouteKey.maxWords))"
        case .badWord(let w): return "invalid word '\(w.prefix(64))': words are 1-64 bytes of [A-Za-z0-9_-]"
        case .wildcardInRoute: return "a route cannot contain * or # (those belong in subscription patterns)"
        }
    }
}

/// An AMQP routing key naming a conversation: words of `[A-Za-z0-9_-]` (1–64 bytes)
/// joined by `.`, at most 16 words and 255 bytes. Anything else is rejected, never rewritten.
public struct RouteKey: Sendable, Hashable, CustomStringConvertible {
    public static let maxBytes = 255
    public static let maxWords = 16
    public static let maxWordBytes = 64

    /// The key as published.
    public let value: String
    public let words: [Substring]

    public init(_ value: String) throws(RouteError) {
        let words = try Self.split(value, allowWildcards: false)
        self.value = value
        self.words = words
    }

    public var description: String { value }

    static func isWordByte(_ b: UInt8) -> Bool {
        (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
            || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: "_") || b == UInt8(ascii: "-")
    }

    /// Whether `s` is one valid word (user names and device names are words too).
    /// Concrete, not generic over `StringProtocol`: called from other modules on every request,
    /// a generic one ran unspecialized (type metadata looked up per call: 2.7 % of Warren's
    /// samples in the `poll` benchmark).
    public static func isValidWord(_ s: String) -> Bool {
        var s = s
        return s.withUTF8(isValidWord(bytes:))
    }

    public static func isValidWord(_ s: Substring) -> Bool {
        var s = s
        return s.withUTF8(isValidWord(bytes:))
    }

    static func isValidWord(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.count >= 1 && bytes.count <= maxWordBytes && bytes.allSatisfy(isWordByte)
    }

    static func split(_ value: String, allowWildcards: Bool) throws(RouteError) -> [Substring] {
        let bytes = value.utf8.count
        guard bytes > 0 else { throw .empty }
        guard bytes <= maxBytes else { throw .tooLong(bytes: bytes) }
        let words = value.split(separator: ".", omittingEmptySubsequences: false)
        guard words.count <= maxWords else { throw .tooManyWords(words.count) }
        for w in words where !isValidWord(w) {
            if allowWildcards, w == "*" || w == "#" { continue }
            if !allowWildcards, w.contains("*") || w.contains("#") { throw .wildcardInRoute }
            throw .badWord(String(w))
        }
        return words
    }
}

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
