#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore

/// What the bench's publisher puts in every message body: the message's sequence number and
/// the moment it was handed to the socket, as ASCII `"<seq>.<nanos>"`.
///
/// Plain ASCII digits survive every target unchanged — a STOMP body, an AMQP body, and the
/// JSON string Warren wraps a non-JSON AMQP body in — so one parser serves all of them and
/// the receiver needs no JSON decoder (the load tool must cost far less per delivery than
/// the target it measures). The clock is the bench process's monotonic clock, which both the
/// publisher and the receivers read.
public struct Stamp: Equatable, Sendable {
    public var seq: Int
    public var sentNanos: UInt64

    public init(seq: Int, sentNanos: UInt64) {
        self.seq = seq
        self.sentNanos = sentNanos
    }

    /// Writes the body form.
    public func write(to buffer: inout ByteBuffer) {
        buffer.writeString(String(seq))
        buffer.writeInteger(UInt8(ascii: "."))
        buffer.writeString(String(sentNanos))
    }

    /// Parses `"<seq>.<nanos>"` starting at `start`; stops at the first byte that is neither a
    /// digit nor the one dot. Nil when the form does not match (a foreign message).
    public static func parse(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Stamp? {
        var i = start
        var seq = 0
        var digits = 0
        while i < bytes.count, let d = digit(bytes[i]) {
            guard digits < 18 else { return nil }
            seq = seq * 10 + d
            digits += 1
            i += 1
        }
        guard digits > 0, i < bytes.count, bytes[i] == UInt8(ascii: ".") else { return nil }
        i += 1
        var nanos: UInt64 = 0
        digits = 0
        while i < bytes.count, let d = digit(bytes[i]) {
            guard digits < 19 else { return nil }
            nanos = nanos * 10 + UInt64(d)
            digits += 1
            i += 1
        }
        guard digits > 0 else { return nil }
        return Stamp(seq: seq, sentNanos: nanos)
    }

    @inline(__always)
    static func digit(_ byte: UInt8) -> Int? {
        byte >= 48 && byte <= 57 ? Int(byte - 48) : nil
    }
}

/// Finds `needle` in `bytes` at or after `start`: `memchr` (vectorised in the C library) to
/// each occurrence of the needle's least common byte, then a compare. A byte-by-byte scan
/// was the bench's largest cost in `poll-burst` (a long answer scanned for every `"body":`),
/// and the load tool's cost is taken from the same two cores as the target's.
@inline(__always)
public func find(_ needle: StaticString, in bytes: UnsafeRawBufferPointer, from start: Int = 0) -> Int? {
    let n = needle.utf8CodeUnitCount
    guard n > 0, start >= 0, bytes.count - start >= n, let base = bytes.baseAddress else { return nil }
    let p = needle.utf8Start
    let a = anchorIndex(p, n)
    let anchor = Int32(p[a])
    var i = start + a
    let end = bytes.count - n + a  // the last place the anchor byte can be
    while i <= end, let hit = memchr(base + i, anchor, end - i + 1) {
        let at = base.distance(to: UnsafeRawPointer(hit)) - a
        if memcmp(base + at, p, n) == 0 { return at }
        i = at + a + 1
    }
    return nil
}

/// The needle's byte least likely in the frames the bench reads: one that is not JSON or
/// STOMP punctuation, a digit, hex or a common letter, if it has one (say `y` in `"body":`).
@inline(__always)
func anchorIndex(_ p: UnsafePointer<UInt8>, _ n: Int) -> Int {
    var best = 0
    var bestRank = UInt8.max
    for k in 0..<n where byteRanks[Int(p[k])] < bestRank {
        best = k
        bestRank = byteRanks[Int(p[k])]
    }
    return best
}

/// How common each byte is in the bench's frames: 0 for any not listed, then by position in
/// the list (punctuation, digits, hex and common letters; the most common last).
private let byteRanks: [UInt8] = {
    var ranks = [UInt8](repeating: 0, count: 256)
    for (i, byte) in "lhmpguricnotsfedcba9876543210-.,{}: \"".utf8.enumerated() { ranks[Int(byte)] = UInt8(i + 1) }
    return ranks
}()

/// The offset of the first `byte` in `bytes[from..<to]`, or nil.
@inline(__always)
public func index(of byte: UInt8, in bytes: UnsafeRawBufferPointer, from: Int, to: Int? = nil) -> Int? {
    let to = to ?? bytes.count
    guard from < to, let base = bytes.baseAddress, let hit = memchr(base + from, Int32(byte), to - from) else { return nil }
    return base.distance(to: UnsafeRawPointer(hit))
}
