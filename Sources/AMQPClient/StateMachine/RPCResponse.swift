import NIOCore

/// The answer to a synchronous request on a channel.
public enum RPCResponse: Sendable {
    case method(AMQPMethod)
    /// `basic.get`: the message, or nil for `get-empty`.
    case message(AMQPMessage?)
}
