import NIOCore

/// A mandatory publish the broker could not route, handed back by `basic.return`.
public struct AMQPReturnedMessage: Sendable {
    public var replyCode: UInt16
    public var replyText: String
    public var exchange: String
    public var routingKey: String
    public var properties: BasicProperties
    public var body: ByteBuffer
}
