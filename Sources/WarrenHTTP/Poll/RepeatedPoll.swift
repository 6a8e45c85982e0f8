#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A poll's request head kept as its bytes, so that the connection's next poll, which repeats
/// it but for its `ack` value, is known by comparing bytes instead of parsing it again. A
/// poller sends the same request over and over (its session string, user or token, `wait`,
/// headers), changing only the cursor it acks: ``PollConnection`` keeps the parse of
/// the first (the head, the identity, `wait` and `max`) and takes every later one that
/// ``match(_:)``es with two `memcmp`s.
///
/// Measured (BENCHMARKS.md, 2026-12-06, fifth session): parsing the head and the query, and
/// checking the identity, took ~1.5 µs of Warren's ~6 µs of its own work per poll answer.
///
/// Taken only from a head whose query, up to the `ack` item, has no percent-encoding or `+`
/// (its raw bytes are what the query says); the new `ack` value may hold only the bytes a
/// cursor is made of (letters, digits, `.`, `-`, `_`, `~`), so the new head is the kept one with
/// that one value changed, and means the same but for it. Anything else is parsed as usual.
struct RepeatedPoll {
    /// The head's bytes before the `ack` value (the whole head when it has no `ack`).
    private let prefix: [UInt8]
    /// The head's bytes after the `ack` value, to its blank line.
    private let suffix: [UInt8]
    /// The head has an `ack` item, whose value may change.
    let hasAck: Bool

    /// The longest `ack` value taken (a cursor is a node id and a number).
    static let maxAckBytes = 128

    /// A template of `head`, the bytes of one request head, to its blank line; nil when its
    /// query cannot be compared byte for byte (see the type's notes).
    init?(head: UnsafeRawBufferPointer) {
        guard let space = head.firstIndex(of: UInt8(ascii: " ")),
              let targetEnd = head[(space + 1)...].firstIndex(of: UInt8(ascii: " ")) else { return nil }
        let target = head[(space + 1)..<targetEnd]
        guard let q = target.firstIndex(of: UInt8(ascii: "?")) else {
            (prefix, suffix, hasAck) = (Array(head), [], false)
            return
        }
        var start = q + 1
        while start < targetEnd {
            let end = target[start...].firstIndex(of: UInt8(ascii: "&")) ?? targetEnd
            let item = head[start..<end]
            guard !item.contains(UInt8(ascii: "%")), !item.contains(UInt8(ascii: "+")) else { return nil }
            if item.starts(with: "ack=".utf8) {
                let value = (start + 4)..<end
                guard value.count <= Self.maxAckBytes, head[value].allSatisfy(Self.isCursorByte) else { return nil }
                (prefix, suffix, hasAck) = (Array(head[..<value.lowerBound]), Array(head[value.upperBound...]), true)
                return
            }
            // An item named `ack` without `=` is an empty value to the query: not taken.
            if item.elementsEqual("ack".utf8) { return nil }
            start = end + 1
        }
        (prefix, suffix, hasAck) = (Array(head), [], false)
    }

    /// The bytes a cursor is made of: a node id (a route word) and a decimal sequence number.
    static func isCursorByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// Whether `bytes` begin with a head that is this one with (at most) its `ack` value
    /// changed: the head's length, and where its `ack` value is (nil when it has none). Nil for
    /// anything else, including a head not all there yet.
    func match(_ bytes: UnsafeRawBufferPointer) -> (length: Int, ack: Range<Int>?)? {
        guard bytes.count >= prefix.count + suffix.count,
              prefix.withUnsafeBytes({ memcmp(bytes.baseAddress!, $0.baseAddress!, prefix.count) }) == 0 else { return nil }
        guard hasAck else { return (prefix.count, nil) }
        var end = prefix.count
        let limit = min(bytes.count - suffix.count, prefix.count + Self.maxAckBytes)
        while end < limit, Self.isCursorByte(bytes[end]) { end += 1 }
        guard suffix.withUnsafeBytes({ memcmp(bytes.baseAddress! + end, $0.baseAddress!, suffix.count) }) == 0 else { return nil }
        return (end + suffix.count, prefix.count..<end)
    }
}
