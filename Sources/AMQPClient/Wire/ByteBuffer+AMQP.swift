import NIOCore

/// Field tables may nest; a hostile peer must not be able to recurse us off the stack.
let maxFieldNesting = 32

extension ByteBuffer {
    // MARK: fixed-width reads that fail with a typed error

    @inlinable
    mutating func readAMQPInteger<T: FixedWidthInteger>(_: T.Type = T.self, _ what: @autoclosure () -> String) throws(AMQPProtocolError) -> T {
        guard let v = self.readInteger(as: T.self) else { throw .truncated(what()) }
        return v
    }

    // MARK: short strings

    mutating func readShortString(_ what: @autoclosure () -> String) throws(AMQPProtocolError) -> String {
        let length = try self.readAMQPInteger(UInt8.self, what())
        guard let bytes = self.readSlice(length: Int(length)) else { throw .truncated(what()) }
        guard let s = String(validating: bytes.readableBytesView, as: UTF8.self) else { throw .invalidUTF8(what()) }
        return s
    }

    mutating func writeShortString(_ s: String) throws(AMQPProtocolError) {
        let count = s.utf8.count
        guard count <= 255 else { throw .shortStringTooLong(count) }
        self.writeInteger(UInt8(count))
        self.writeString(s)
    }

    // MARK: long strings

    mutating func readLongStringBytes(_ what: @autoclosure () -> String) throws(AMQPProtocolError) -> ByteBuffer {
        let length = try self.readAMQPInteger(UInt32.self, what())
        guard length <= self.readableBytes, let slice = self.readSlice(length: Int(length)) else {
            throw .truncated(what())
        }
        return slice
    }

    mutating func readLongString(_ what: @autoclosure () -> String) throws(AMQPProtocolError) -> String {
        let bytes = try self.readLongStringBytes(what())
        guard let s = String(validating: bytes.readableBytesView, as: UTF8.self) else { throw .invalidUTF8(what()) }
        return s
    }

    mutating func writeLongString(_ s: String) {
        self.writeInteger(UInt32(s.utf8.count))
        self.writeString(s)
    }

    mutating func writeLongString(bytes: some Collection<UInt8>) {
        self.writeInteger(UInt32(bytes.count))
        self.writeBytes(bytes)
    }

    // MARK: field tables

    mutating func readFieldTable(depth: Int = 0) throws(AMQPProtocolError) -> FieldTable {
        guard depth < maxFieldNesting else { throw .nestingTooDeep }
        var slice = try self.readLongStringBytes("field table")
        var table = FieldTable()
        while slice.readableBytes > 0 {
            let key = try slice.readShortString("field table key")
            table[key] = try slice.readFieldValue(depth: depth)
        }
        return table
    }

    mutating func writeFieldTable(_ table: FieldTable) throws(AMQPProtocolError) {
        let lengthIndex = self.writerIndex
        self.writeInteger(UInt32(0))
        let start = self.writerIndex
        // Sorted keys make the encoding deterministic (useful for tests and caches).
        for key in table.keys.sorted() {
            try self.writeShortString(key)
            try self.writeFieldValue(table[key]!)
        }
        self.setInteger(UInt32(self.writerIndex - start), at: lengthIndex)
    }

    mutating func readFieldValue(depth: Int) throws(AMQPProtocolError) -> FieldValue {
        let type = try self.readAMQPInteger(UInt8.self, "field type")
        switch type {
        case UInt8(ascii: "t"): return .bool(try self.readAMQPInteger(UInt8.self, "bool") != 0)
        case UInt8(ascii: "b"): return .int8(try self.readAMQPInteger(Int8.self, "int8"))
        case UInt8(ascii: "B"): return .uint8(try self.readAMQPInteger(UInt8.self, "uint8"))
        case UInt8(ascii: "s"): return .int16(try self.readAMQPInteger(Int16.self, "int16"))
        case UInt8(ascii: "u"): return .uint16(try self.readAMQPInteger(UInt16.self, "uint16"))
        case UInt8(ascii: "I"): return .int32(try self.readAMQPInteger(Int32.self, "int32"))
        case UInt8(ascii: "i"): return .uint32(try self.readAMQPInteger(UInt32.self, "uint32"))
        case UInt8(ascii: "l"): return .int64(try self.readAMQPInteger(Int64.self, "int64"))
        case UInt8(ascii: "f"): return .float(Float(bitPattern: try self.readAMQPInteger(UInt32.self, "float")))
        case UInt8(ascii: "d"): return .double(Double(bitPattern: try self.readAMQPInteger(UInt64.self, "double")))
        case UInt8(ascii: "D"):
            let scale = try self.readAMQPInteger(UInt8.self, "decimal scale")
            return .decimal(scale: scale, value: try self.readAMQPInteger(UInt32.self, "decimal"))
        case UInt8(ascii: "S"): return .longString(Array(try self.readLongStringBytes("long string").readableBytesView))
        case UInt8(ascii: "x"): return .bytes(Array(try self.readLongStringBytes("byte array").readableBytesView))
        case UInt8(ascii: "A"):
            guard depth + 1 < maxFieldNesting else { throw .nestingTooDeep }
            var slice = try self.readLongStringBytes("array")
            var values: [FieldValue] = []
            while slice.readableBytes > 0 { values.append(try slice.readFieldValue(depth: depth + 1)) }
            return .array(values)
        case UInt8(ascii: "T"): return .timestamp(try self.readAMQPInteger(UInt64.self, "timestamp"))
        case UInt8(ascii: "F"): return .table(try self.readFieldTable(depth: depth + 1))
        case UInt8(ascii: "V"): return .void
        default: throw .unknownFieldType(type)
        }
    }

    mutating func writeFieldValue(_ value: FieldValue) throws(AMQPProtocolError) {
        switch value {
        case .bool(let v): self.writeInteger(UInt8(ascii: "t")); self.writeInteger(UInt8(v ? 1 : 0))
        case .int8(let v): self.writeInteger(UInt8(ascii: "b")); self.writeInteger(v)
        case .uint8(let v): self.writeInteger(UInt8(ascii: "B")); self.writeInteger(v)
        case .int16(let v): self.writeInteger(UInt8(ascii: "s")); self.writeInteger(v)
        case .uint16(let v): self.writeInteger(UInt8(ascii: "u")); self.writeInteger(v)
        case .int32(let v): self.writeInteger(UInt8(ascii: "I")); self.writeInteger(v)
        case .uint32(let v): self.writeInteger(UInt8(ascii: "i")); self.writeInteger(v)
        case .int64(let v): self.writeInteger(UInt8(ascii: "l")); self.writeInteger(v)
        case .float(let v): self.writeInteger(UInt8(ascii: "f")); self.writeInteger(v.bitPattern)
        case .double(let v): self.writeInteger(UInt8(ascii: "d")); self.writeInteger(v.bitPattern)
        case .decimal(let scale, let v):
            self.writeInteger(UInt8(ascii: "D")); self.writeInteger(scale); self.writeInteger(v)
        case .longString(let bytes): self.writeInteger(UInt8(ascii: "S")); self.writeLongString(bytes: bytes)
        case .bytes(let bytes): self.writeInteger(UInt8(ascii: "x")); self.writeLongString(bytes: bytes)
        case .array(let values):
            self.writeInteger(UInt8(ascii: "A"))
            let lengthIndex = self.writerIndex
            self.writeInteger(UInt32(0))
            let start = self.writerIndex
            for v in values { try self.writeFieldValue(v) }
            self.setInteger(UInt32(self.writerIndex - start), at: lengthIndex)
        case .timestamp(let v): self.writeInteger(UInt8(ascii: "T")); self.writeInteger(v)
        case .table(let t): self.writeInteger(UInt8(ascii: "F")); try self.writeFieldTable(t)
        case .void: self.writeInteger(UInt8(ascii: "V"))
        }
    }
}

/// Packs consecutive AMQP `bit` fields into octets, as the protocol requires.
struct BitPacker {
    private(set) var byte: UInt8 = 0
    private var index: UInt8 = 0
    mutating func append(_ bit: Bool) {
        if bit { byte |= (1 << index) }
        index += 1
    }
}

extension UInt8 {
    @inlinable func bit(_ i: Int) -> Bool { (self >> i) & 1 == 1 }
}
