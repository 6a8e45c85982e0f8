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
        bytes.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): raw("\\\"")
            case UInt8(ascii: "\\"): raw("\\\\")
            case 0x0A: raw("\\n")
            case 0x0D: raw("\\r")
            case 0x09: raw("\\t")
            case 0..<0x20:
                raw("\\u00")
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(hex[Int(b >> 4)])
                bytes.append(hex[Int(b & 0xF)])
            default: bytes.append(b)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    public mutating func int(_ v: Int64) { bytes.append(contentsOf: Array(String(v).utf8)) }

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
