import Foundation

/// Reads the query string of a request target.
struct Query {
    var items = Items()

    /// A query's items, first occurrence of a name winning: a handful per request, looked up
    /// by a linear scan (cheaper than hashing for so few; a poll is read thousands of times a
    /// second).
    struct Items {
        private var pairs: [(name: String, value: String)] = []

        subscript(name: String) -> String? {
            pairs.first { $0.name == name }?.value
        }

        /// Every value of a name given more than once (`pattern=a&pattern=b`), in order.
        func all(_ name: String) -> [String] { pairs.filter { $0.name == name }.map(\.value) }

        var count: Int { pairs.count }
        var isEmpty: Bool { pairs.isEmpty }

        /// Room for `n` items, so the usual few take one allocation.
        mutating func reserve(_ n: Int) { pairs.reserveCapacity(n) }

        /// Items kept per query: Warren reads fewer than ten names (an event stream's repeated
        /// `pattern` aside); past this many the rest are ignored, so a hostile target of
        /// thousands of items costs no quadratic scan.
        static let limit = 32

        /// Adds `value` unless `limit` items are there (the first of a name is the one read).
        mutating func add(_ name: String, _ value: String) {
            if pairs.count < Self.limit { pairs.append((name, value)) }
        }
    }

    /// Works on the target's contiguous UTF-8 bytes, one pass, no intermediate arrays: a poll's
    /// target carries a session string of a few hundred bytes and is read on every poll (a
    /// profile put a `split`-based version at 9 % of Warren's CPU in the poll benchmark, and
    /// index-by-index work on `String.UTF8View` at ~2 %).
    init(target: String) {
        var target = target
        items = target.withUTF8 { bytes in
            var items = Items()
            // `memchr` past the path (a session string of a few hundred bytes) and between items.
            guard let q = ByteSearch.index(of: UInt8(ascii: "?"), in: bytes, from: 0) else { return items }
            items.reserve(4)
            var start = q + 1
            while start < bytes.count {
                let end = ByteSearch.index(of: UInt8(ascii: "&"), in: bytes, from: start) ?? bytes.count
                if end > start {
                    let pair = UnsafeBufferPointer(rebasing: bytes[start..<end])
                    let eq = pair.firstIndex(of: UInt8(ascii: "="))
                    let name = Self.decode(UnsafeBufferPointer(rebasing: pair[..<(eq ?? pair.count)]))
                    items.add(name, eq.map { Self.decode(UnsafeBufferPointer(rebasing: pair[($0 + 1)...])) } ?? "")
                }
                start = end + 1
            }
            return items
        }
    }

    /// A query value that is a decimal integer (an optional sign, then digits), else nil. One past
    /// `Int`'s range is clamped to it: still a number, above (or below) any limit its caller
    /// clamps to, not malformed.
    static func integer(_ raw: String) -> Int? {
        if let n = Int(raw) { return n }
        var digits = Substring(raw)
        let negative = digits.first == "-"
        if negative || digits.first == "+" { digits = digits.dropFirst() }
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return negative ? Int.min : Int.max
    }

    static func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        let raw = String(decoding: bytes, as: UTF8.self)
        // Most values (session strings, cursors, numbers) need no decoding.
        guard bytes.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) else { return raw }
        let spaced = raw.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
