/// Why a frame from the peer could not be accepted.
///
/// Every decoding failure is one of these, never a crash: the connection
/// answers it with `connection.close` carrying ``replyCode`` and then drops the socket.
public enum AMQPProtocolError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The frame's declared size exceeds the negotiated `frame_max`.
    case frameTooLarge(size: UInt32, max: UInt32)
    /// The octet after the payload was not the frame-end marker `0xCE`.
    case badFrameEnd(UInt8)
    /// A frame type outside method / header / body / heartbeat.
    case unknownFrameType(UInt8)
    /// A field ran past the end of its frame or table.
    case truncated(String)
    /// Bytes were left over after every field of a method or header was read.
    case trailingBytes(String)
    /// A class / method pair this client does not know.
    case unknownMethod(classID: UInt16, methodID: UInt16)
    /// A field-table value type octet outside the RabbitMQ errata table.
    case unknownFieldType(UInt8)
    /// A string that must be UTF-8 was not.
    case invalidUTF8(String)
    /// A string longer than a short string (255 bytes) can hold.
    case shortStringTooLong(Int)
    /// A field table or array nested deeper than the decoder accepts.
    case nestingTooDeep
    /// A frame arrived where the protocol does not allow one of its kind.
    case unexpectedFrame(String)
    /// A method arrived that is invalid in the current state.
    case commandInvalid(String)
    /// A frame for a channel that is not open.
    case channelNotOpen(UInt16)
    /// A heartbeat frame on a channel other than 0, or a similar framing breach.
    case frameError(String)

    /// The AMQP reply code `connection.close` carries for this error.
    public var replyCode: UInt16 {
        switch self {
        case .frameTooLarge, .badFrameEnd, .unknownFrameType, .frameError: return ReplyCode.frameError
        case .truncated, .trailingBytes, .unknownFieldType, .invalidUTF8, .shortStringTooLong, .nestingTooDeep:
            return ReplyCode.syntaxError
        case .unknownMethod: return ReplyCode.notImplemented
        case .unexpectedFrame: return ReplyCode.unexpectedFrame
        case .commandInvalid: return ReplyCode.commandInvalid
        case .channelNotOpen: return ReplyCode.channelError
        }
    }

    public var description: String {
        switch self {
        case .frameTooLarge(let size, let max): return "frame of \(size) bytes exceeds frame_max \(max)"
        case .badFrameEnd(let b): return "bad frame end octet 0x\(String(b, radix: 16))"
        case .unknownFrameType(let t): return "unknown frame type \(t)"
        case .truncated(let what): return "truncated \(what)"
        case .trailingBytes(let what): return "trailing bytes after \(what)"
        case .unknownMethod(let c, let m): return "unknown method \(c).\(m)"
        case .unknownFieldType(let t): return "unknown field type 0x\(String(t, radix: 16))"
        case .invalidUTF8(let what): return "invalid UTF-8 in \(what)"
        case .shortStringTooLong(let n): return "short string of \(n) bytes (max 255)"
        case .nestingTooDeep: return "field table nested too deep"
        case .unexpectedFrame(let what): return "unexpected frame: \(what)"
        case .commandInvalid(let what): return "command invalid: \(what)"
        case .channelNotOpen(let ch): return "frame for channel \(ch) which is not open"
        case .frameError(let what): return "frame error: \(what)"
        }
    }
}
