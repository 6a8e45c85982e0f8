/// Topic matching on raw UTF-8 bytes, for the per-message paths (a publish's ACL check, a
/// route's metrics class, an inbox delivery's subscription): no allocation, no lock.
///
/// The same automaton as ``PatternNFA`` — state `i` means "the first `i` pattern words are
/// matched" — with the states as the bits of one `UInt32` (a pattern has at most 16 words, so
/// 17 states) and the words read in place from the pattern's and the key's bytes.
/// ``PatternNFA`` stays for containment, where state sets are compared and hashed.
enum TopicMatcher {
    private static let dot = UInt8(ascii: ".")

    /// Whether `pattern` (a valid topic pattern's bytes) matches `key` (a valid routing key's).
    static func matches(pattern: UnsafeBufferPointer<UInt8>, key: UnsafeBufferPointer<UInt8>) -> Bool {
        withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: RouteKey.maxWords) { words in
            // The pattern's words: their byte ranges, and which are `#` and `*`.
            var count = 0
            var hashes: UInt32 = 0
            var stars: UInt32 = 0
            var start = 0
            for i in 0...pattern.count where i == pattern.count || pattern[i] == dot {
                guard count < RouteKey.maxWords else { return false }
                words[count] = start..<i
                if i - start == 1 {
                    if pattern[start] == UInt8(ascii: "#") { hashes |= 1 << count }
                    if pattern[start] == UInt8(ascii: "*") { stars |= 1 << count }
                }
                count += 1
                start = i + 1
            }
            let accepting: UInt32 = 1 << count

            // The states reachable without input: past every `#` in the set, in order.
            func closure(_ states: UInt32) -> UInt32 {
                var states = states
                var pending = states & hashes
                while pending != 0 {
                    let i = pending.trailingZeroBitCount
                    pending &= pending - 1
                    if states & (1 << i) != 0 {
                        states |= 1 << (i + 1)
                        pending |= (1 << (i + 1)) & hashes
                    }
                }
                return states
            }

            var states = closure(1)
            var wordStart = 0
            for i in 0...key.count where i == key.count || key[i] == dot {
                let word = UnsafeBufferPointer(rebasing: key[wordStart..<i])
                wordStart = i + 1
                var next: UInt32 = 0
                var live = states & (accepting - 1)
                while live != 0 {
                    let s = live.trailingZeroBitCount
                    live &= live - 1
                    let bit: UInt32 = 1 << s
                    if hashes & bit != 0 {
                        next |= bit
                    } else if stars & bit != 0 || UnsafeBufferPointer(rebasing: pattern[words[s]]).elementsEqual(word) {
                        next |= bit << 1
                    }
                }
                states = closure(next)
                if states == 0 { return false }
            }
            return states & accepting != 0
        }
    }

    /// Whether `key` is a valid routing key (``RouteKey``'s rules), without building one.
    static func isValidKey(_ key: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !key.isEmpty, key.count <= RouteKey.maxBytes else { return false }
        var words = 1
        var length = 0
        for b in key {
            if b == dot {
                guard length > 0, words < RouteKey.maxWords else { return false }
                words += 1
                length = 0
            } else {
                guard RouteKey.isWordByte(b), length < RouteKey.maxWordBytes else { return false }
                length += 1
            }
        }
        return length > 0
    }
}

extension TopicPattern {
    /// Whether the pattern matches `key` (AMQP topic semantics); `key` must be a valid routing key.
    func matches(validKey key: String) -> Bool {
        var key = key
        return key.withUTF8 { matches(validKeyBytes: $0) }
    }

    /// Whether the pattern matches the routing key `key` (its bytes; a valid key).
    func matches(validKeyBytes key: UnsafeBufferPointer<UInt8>) -> Bool {
        var pattern = value
        return pattern.withUTF8 { TopicMatcher.matches(pattern: $0, key: key) }
    }
}
