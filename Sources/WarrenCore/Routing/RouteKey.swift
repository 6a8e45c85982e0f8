/// An AMQP routing key naming a conversation: words of `[A-Za-z0-9_-]` (1–64 bytes)
/// joined by `.`, at most 16 words and 255 bytes. Anything else is rejected, never rewritten.
public struct RouteKey: Sendable, Hashable, CustomStringConvertible {
    public static let maxBytes = 255
    public static let maxWords = 16
    public static let maxWordBytes = 64
    /// What a word is, for error messages (users, devices and node ids are words too).
    public static let wordRule = "a word of 1 to \(maxWordBytes) characters from [A-Za-z0-9_-]"

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
