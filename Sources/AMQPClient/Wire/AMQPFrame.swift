import NIOCore

/// One AMQP frame: the unit the wire is cut into.
public enum AMQPFrame: Sendable, Hashable {
    case method(channel: UInt16, AMQPMethod)
    case header(channel: UInt16, ContentHeader)
    case body(channel: UInt16, ByteBuffer)
    case heartbeat

    /// The channel the frame belongs to (0 for the connection itself and heartbeats).
    public var channel: UInt16 {
        switch self {
        case .method(let ch, _), .header(let ch, _), .body(let ch, _): return ch
        case .heartbeat: return 0
        }
    }

    enum FrameType {
        static let method: UInt8 = 1
        static let header: UInt8 = 2
        static let body: UInt8 = 3
        static let heartbeat: UInt8 = 8
    }
    static let frameEnd: UInt8 = 0xCE
    /// Type, channel and size before the payload, plus the frame-end octet after it.
    public static let overhead = 8
    /// The smallest `frame_max` the protocol allows.
    public static let minimumFrameMax: UInt32 = 4096
    /// The protocol header a client opens the connection with.
    public static let protocolHeader: [UInt8] = [0x41, 0x4D, 0x51, 0x50, 0, 0, 9, 1]
}

extension AMQPFrame {
    /// Decodes one frame from the front of `buffer`.
    ///
    /// Returns nil when the buffer does not yet hold a whole frame (and leaves it
    /// untouched). The declared size is checked against `maxFrameSize` before any
    /// payload is awaited, so a hostile length cannot make us buffer gigabytes.
    public static func decode(from buffer: inout ByteBuffer, maxFrameSize: UInt32) throws(AMQPProtocolError) -> AMQPFrame? {
        guard buffer.readableBytes >= 7 else { return nil }
        let start = buffer.readerIndex
        let type = buffer.getInteger(at: start, as: UInt8.self)!
        let channel = buffer.getInteger(at: start + 1, as: UInt16.self)!
        let size = buffer.getInteger(at: start + 3, as: UInt32.self)!
        switch type {
        case FrameType.method, FrameType.header, FrameType.body, FrameType.heartbeat: break
        default: throw .unknownFrameType(type)
        }
        guard UInt64(size) + UInt64(overhead) <= UInt64(maxFrameSize) else {
            throw .frameTooLarge(size: size, max: maxFrameSize)
        }
        guard buffer.readableBytes >= 7 + Int(size) + 1 else { return nil }
        let end = buffer.getInteger(at: start + 7 + Int(size), as: UInt8.self)!
        guard end == frameEnd else { throw .badFrameEnd(end) }
        var payload = buffer.getSlice(at: start + 7, length: Int(size))!
        buffer.moveReaderIndex(forwardBy: 7 + Int(size) + 1)

        switch type {
        case FrameType.method:
            return .method(channel: channel, try AMQPMethod.decode(from: &payload))
        case FrameType.header:
            guard channel != 0 else { throw .frameError("content header on channel 0") }
            let classID = try payload.readAMQPInteger(UInt16.self, "header class id")
            let weight = try payload.readAMQPInteger(UInt16.self, "header weight")
            guard weight == 0 else { throw .frameError("content header weight \(weight)") }
            let bodySize = try payload.readAMQPInteger(UInt64.self, "body size")
            guard classID == 60 else { throw .frameError("content header for class \(classID)") }
            let properties = try BasicProperties(from: &payload)
            guard payload.readableBytes == 0 else { throw .trailingBytes("content header") }
            return .header(channel: channel, ContentHeader(classID: classID, bodySize: bodySize, properties: properties))
        case FrameType.body:
            guard channel != 0 else { throw .frameError("content body on channel 0") }
            return .body(channel: channel, payload)
        default:
            guard channel == 0, size == 0 else { throw .frameError("heartbeat on channel \(channel) with \(size) bytes") }
            return .heartbeat
        }
    }

    /// Appends the frame's wire form to `buffer`.
    public func encode(into buffer: inout ByteBuffer) throws(AMQPProtocolError) {
        let type: UInt8
        switch self {
        case .method: type = FrameType.method
        case .header: type = FrameType.header
        case .body: type = FrameType.body
        case .heartbeat: type = FrameType.heartbeat
        }
        buffer.writeInteger(type)
        buffer.writeInteger(self.channel)
        let sizeIndex = buffer.writerIndex
        buffer.writeInteger(UInt32(0))
        let start = buffer.writerIndex
        switch self {
        case .method(_, let method):
            try method.encode(into: &buffer)
        case .header(_, let header):
            buffer.writeInteger(header.classID)
            buffer.writeInteger(UInt16(0))
            buffer.writeInteger(header.bodySize)
            try header.properties.write(to: &buffer)
        case .body(_, let body):
            buffer.writeImmutableBuffer(body)
        case .heartbeat:
            break
        }
        buffer.setInteger(UInt32(buffer.writerIndex - start), at: sizeIndex)
        buffer.writeInteger(AMQPFrame.frameEnd)
    }

    /// The frames that carry one message: the method, its content header, and the body
    /// cut into slices of at most `frameMax - 8` bytes (no copy: the slices share storage).
    public static func content(channel: UInt16, method: AMQPMethod, properties: BasicProperties,
                               body: ByteBuffer, frameMax: UInt32) -> [AMQPFrame] {
        let chunk = Int(max(frameMax, minimumFrameMax)) - overhead
        var frames: [AMQPFrame] = [
            .method(channel: channel, method),
            .header(channel: channel, ContentHeader(bodySize: UInt64(body.readableBytes), properties: properties)),
        ]
        frames.reserveCapacity(2 + (body.readableBytes + chunk - 1) / chunk)
        var offset = body.readerIndex
        let end = body.writerIndex
        while offset < end {
            let length = min(chunk, end - offset)
            frames.append(.body(channel: channel, body.getSlice(at: offset, length: length)!))
            offset += length
        }
        return frames
    }
}
