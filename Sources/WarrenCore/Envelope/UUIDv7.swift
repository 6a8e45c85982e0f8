import NIOConcurrencyHelpers

/// Time-ordered unique ids (RFC 9562 version 7), lower-case canonical form.
///
/// 48 bits of Unix milliseconds, then a 12-bit counter that starts at a random
/// value each millisecond (so ids from one process sort in issue order), then
/// 62 random bits.
public final class UUIDv7Generator: Sendable {
    private let state = NIOLockedValueBox<(ms: UInt64, counter: UInt16)>((0, 0))

    public init() {}

    public func next(nowMilliseconds: UInt64) -> String {
        var rng = SystemRandomNumberGenerator()
        let (ms, counter) = state.withLockedValue { s -> (UInt64, UInt16) in
            if nowMilliseconds > s.ms {
                s.ms = nowMilliseconds
                s.counter = UInt16.random(in: 0..<0x800, using: &rng)
            } else if s.counter >= 0xFFF {
                s.ms += 1 // counter exhausted within this millisecond: borrow the next one
                s.counter = 0
            } else {
                s.counter += 1
            }
            return (s.ms, s.counter)
        }
        var bytes = [UInt8](repeating: 0, count: 16)
        for k in 0..<6 { bytes[k] = UInt8(truncatingIfNeeded: ms >> (8 * (5 - k))) }
        bytes[6] = 0x70 | UInt8(counter >> 8)
        bytes[7] = UInt8(truncatingIfNeeded: counter)
        let random = rng.next()
        for k in 8..<16 { bytes[k] = UInt8(truncatingIfNeeded: random >> (8 * (15 - k))) }
        bytes[8] = 0x80 | (bytes[8] & 0x3F)
        return Self.format(bytes)
    }

    static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    static func format(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity(36)
        for (k, b) in bytes.enumerated() {
            if k == 4 || k == 6 || k == 8 || k == 10 { out.append(UInt8(ascii: "-")) }
            out.append(hex[Int(b >> 4)])
            out.append(hex[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The canonical lower-case form of `s` if it is a UUID (any version, any case), else nil.
    public static func canonical(_ s: String) -> String? {
        let u = Array(s.utf8)
        guard u.count == 36 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(36)
        for (k, c) in u.enumerated() {
            if k == 8 || k == 13 || k == 18 || k == 23 {
                guard c == UInt8(ascii: "-") else { return nil }
                out.append(c)
                continue
            }
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): out.append(c)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): out.append(c + 32)
            default: return nil
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
