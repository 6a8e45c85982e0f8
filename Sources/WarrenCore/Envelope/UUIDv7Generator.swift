import NIOConcurrencyHelpers

#if canImport(Glibc)
import Glibc
#endif

/// Time-ordered unique ids (RFC 9562 version 7), lower-case canonical form.
///
/// 48 bits of Unix milliseconds, then a 12-bit counter that starts at a random
/// value each millisecond (so ids from one process sort in issue order), then
/// 62 random bits. The random bits come from the system's CSPRNG, read 256 bytes at a
/// time (`arc4random_buf`: one `getrandom` per 32 ids, not one or two per id).
public final class UUIDv7Generator: Sendable {
    private struct State {
        var ms: UInt64 = 0
        var counter: UInt16 = 0
        var pool = RandomPool()
    }
    private let state = NIOLockedValueBox(State())

    public init() {}

    /// Whether `id` has the form Warren's ids have: 36 bytes of lower-case hex digits and dashes.
    public static func isWellFormed(_ id: String) -> Bool {
        id.utf8.count == 36 && id.utf8.allSatisfy { ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
            || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f")) || $0 == UInt8(ascii: "-") }
    }

    public func next(nowMilliseconds: UInt64) -> String {
        let (ms, counter, random) = state.withLockedValue { s -> (UInt64, UInt16, UInt64) in
            if nowMilliseconds > s.ms {
                s.ms = nowMilliseconds
                s.counter = UInt16(truncatingIfNeeded: s.pool.next()) & 0x7FF
            } else if s.counter >= 0xFFF {
                s.ms += 1 // counter exhausted within this millisecond: borrow the next one
                s.counter = 0
            } else {
                s.counter += 1
            }
            return (s.ms, s.counter, s.pool.next())
        }
        let high = ms << 16 | 0x7000 | UInt64(counter & 0xFFF)
        let low = random & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
        return Self.format(high: high, low: low)
    }

    /// The 16 bytes `high` (big-endian) then `low`, as `8-4-4-4-12` lower-case hex.
    static func format(high: UInt64, low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 36) { out in
            let hex: StaticString = "0123456789abcdef"
            var at = 0
            for k in 0..<16 {
                if k == 4 || k == 6 || k == 8 || k == 10 {
                    out[at] = UInt8(ascii: "-")
                    at += 1
                }
                let byte = UInt8(truncatingIfNeeded: (k < 8 ? high : low) >> (8 * (7 - k % 8)))
                out[at] = hex.utf8Start[Int(byte >> 4)]
                out[at + 1] = hex.utf8Start[Int(byte & 0xF)]
                at += 2
            }
            return 36
        }
    }

    /// The canonical lower-case form of `s` if it is a UUID (any version, any case), else nil.
    /// Already canonical (the usual case): `s` itself.
    public static func canonical(_ s: String) -> String? {
        var lowered = false
        var u = s
        let valid = u.withUTF8 { bytes -> Bool in
            guard bytes.count == 36 else { return false }
            for (k, c) in bytes.enumerated() {
                if k == 8 || k == 13 || k == 18 || k == 23 {
                    guard c == UInt8(ascii: "-") else { return false }
                    continue
                }
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): continue
                case UInt8(ascii: "A")...UInt8(ascii: "F"): lowered = true
                default: return false
                }
            }
            return true
        }
        guard valid else { return nil }
        return lowered ? s.lowercased() : s
    }
}

/// Bytes of the system's CSPRNG, fetched in blocks.
private struct RandomPool {
    private var words = [UInt64](repeating: 0, count: 32)
    private var used = 32

    mutating func next() -> UInt64 {
        if used == words.count { refill() }
        defer { used += 1 }
        return words[used]
    }

    private mutating func refill() {
        #if canImport(Glibc)
        words.withUnsafeMutableBytes { arc4random_buf($0.baseAddress!, $0.count) }
        #else
        var rng = SystemRandomNumberGenerator()
        for i in words.indices { words[i] = rng.next() }
        #endif
        used = 0
    }
}
