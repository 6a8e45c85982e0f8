import NIOCore

/// An AMQP field table: the argument and header maps of the protocol.
public typealias FieldTable = [String: FieldValue]

/// One value in a field table or array, with the type octets of RabbitMQ's errata
/// (`s` is int16, `l` is int64, `x` is a byte array), which is what RabbitMQ sends.
public enum FieldValue: Sendable, Hashable {
    case bool(Bool)             // t
    case int8(Int8)             // b
    case uint8(UInt8)           // B
    case int16(Int16)           // s
    case uint16(UInt16)         // u
    case int32(Int32)           // I
    case uint32(UInt32)         // i
    case int64(Int64)           // l
    case float(Float)           // f
    case double(Double)         // d
    case decimal(scale: UInt8, value: UInt32) // D
    case longString([UInt8])    // S (bytes; usually UTF-8)
    case bytes([UInt8])         // x
    case array([FieldValue])    // A
    case timestamp(UInt64)      // T
    case table(FieldTable)      // F
    case void                   // V

    /// Convenience for the common case of a UTF-8 long string.
    public static func string(_ s: String) -> FieldValue { .longString(Array(s.utf8)) }

    /// The value as a string when it is a long string holding valid UTF-8.
    public var stringValue: String? {
        if case .longString(let bytes) = self { return String(validating: bytes, as: UTF8.self) }
        return nil
    }

    /// The value as an integer when it is any integer type.
    public var intValue: Int64? {
        switch self {
        case .int8(let v): return Int64(v)
        case .uint8(let v): return Int64(v)
        case .int16(let v): return Int64(v)
        case .uint16(let v): return Int64(v)
        case .int32(let v): return Int64(v)
        case .uint32(let v): return Int64(v)
        case .int64(let v): return v
        case .timestamp(let v): return v <= UInt64(Int64.max) ? Int64(v) : nil
        default: return nil
        }
    }
}

extension FieldValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int64(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
