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

/// Finds `needle` in `bytes` at or after `start` (a plain scan: the frames are short).
@inline(__always)
public func find(_ needle: StaticString, in bytes: UnsafeRawBufferPointer, from start: Int = 0) -> Int? {
    let n = needle.utf8CodeUnitCount
    guard n > 0, bytes.count >= n else { return nil }
    let p = needle.utf8Start
    let first = p[0]
    var i = start
    let last = bytes.count - n
    while i <= last {
        if bytes[i] == first {
            var k = 1
            while k < n, bytes[i + k] == p[k] { k += 1 }
            if k == n { return i }
        }
        i += 1
    }
    return nil
}
