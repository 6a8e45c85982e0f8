/// Compact JSON output into a byte array: no Foundation, no intermediate strings.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public mutating func raw(_ s: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// Bytes already JSON (an envelope as kept), copied in as they are.
    public mutating func json(_ encoded: some Sequence<UInt8>) { bytes.append(contentsOf: encoded) }

    public mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            bytes.reserveCapacity(bytes.count + utf8.count + 2)
            bytes.append(UInt8(ascii: "\""))
            // Runs that need no escaping are copied whole (byte by byte, each append checked
            // capacity and uniqueness: a message body is most of an envelope).
            var run = 0
            for i in 0..<utf8.count {
                let b = utf8[i]
                guard b < 0x20 || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") else { continue }
                if run < i { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run..<i])) }
                escape(b)
                run = i + 1
            }
            if run < utf8.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run...])) }
            bytes.append(UInt8(ascii: "\""))
        }
    }

    /// A JSON array of strings.
    public mutating func strings(_ items: some Sequence<String>) {
        raw("[")
        for (k, item) in items.enumerated() {
            if k > 0 { raw(",") }
            string(item)
        }
        raw("]")
    }

    private mutating func escape(_ b: UInt8) {
        switch b {
        case UInt8(ascii: "\""): raw("\\\"")
        case UInt8(ascii: "\\"): raw("\\\\")
        case 0x0A: raw("\\n")
        case 0x0D: raw("\\r")
        case 0x09: raw("\\t")
        default:
            raw("\\u00")
            let hex: StaticString = "0123456789abcdef"
            bytes.append(hex.utf8Start[Int(b >> 4)])
            bytes.append(hex.utf8Start[Int(b & 0xF)])
        }
    }

    public mutating func int(_ v: Int64) {
        // Digits written straight in (no String, no array per number).
        if v == 0 { return bytes.append(UInt8(ascii: "0")) }
        if v < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = v.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: Int64's 19 digits fit
        var n = 0
        withUnsafeMutableBytes(of: &digits) { d in
            while magnitude > 0 {
                d[n] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                n += 1
            }
            for k in stride(from: n - 1, through: 0, by: -1) { bytes.append(d[k]) }
        }
    }

    public mutating func value(_ v: JSONValue) {
        switch v {
        case .null: raw("null")
        case .bool(let b): b ? raw("true") : raw("false")
        case .number(let n): bytes.append(contentsOf: n.utf8)
        case .string(let s): string(s)
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (k, item) in items.enumerated() {
                if k > 0 { bytes.append(UInt8(ascii: ",")) }
                value(item)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            for (k, m) in members.enumerated() {
                if k > 0 { bytes.append(UInt8(ascii: ",")) }
                string(m.key)
                bytes.append(UInt8(ascii: ":"))
                value(m.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }
}

extension JSONValue {
    /// The compact encoding.
    public var encoded: [UInt8] {
        var w = JSONWriter()
        w.value(self)
        return w.bytes
    }
}
