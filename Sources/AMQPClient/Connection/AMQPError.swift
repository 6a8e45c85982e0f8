/// Everything that can go wrong when talking to the broker, as one typed error.
public enum AMQPError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The `amqp://` URL could not be parsed.
    case invalidURL(String)
    /// TCP connect or the protocol handshake failed.
    case connectionFailed(String)
    /// The broker refused our credentials (reply 403 during the handshake).
    case authenticationFailed(String)
    /// The broker closed the connection with `connection.close`.
    case connectionClosedByServer(CloseArguments)
    /// The socket closed or failed without a `connection.close`.
    case connectionLost(String)
    /// The peer sent nothing for two heartbeat intervals.
    case heartbeatTimeout
    /// The peer broke the protocol; we closed the connection with this error's reply code.
    case protocolViolation(AMQPProtocolError)
    /// A channel was closed by the broker (a channel-level error such as 404 or 406).
    case channelClosed(CloseArguments)
    /// The operation was attempted on a channel this client had already closed.
    case channelNotOpen(UInt16)
    /// Every channel id up to the negotiated `channel_max` is in use.
    case channelLimitReached(UInt16)
    /// The broker answered a publish with `basic.nack`.
    case publishNacked
    /// The broker cancelled the consumer (for example its queue was deleted).
    case consumerCancelled(consumerTag: String)
    /// The connection is recovering; try again when it is connected.
    case notConnected
    /// The connection was closed by this client.
    case closedByUser
    /// An answer did not come within the allowed time.
    case timedOut(String)
    /// An argument was outside what the protocol can carry (for example a name over 255 bytes).
    case invalidArgument(String)

    public var description: String {
        switch self {
        case .invalidURL(let s): return "invalid AMQP URL: \(s)"
        case .connectionFailed(let s): return "connection failed: \(s)"
        case .authenticationFailed(let s): return "authentication failed: \(s)"
        case .connectionClosedByServer(let c): return "connection closed by server: \(c)"
        case .connectionLost(let s): return "connection lost: \(s)"
        case .heartbeatTimeout: return "missed heartbeats: peer declared dead"
        case .protocolViolation(let e): return "protocol violation: \(e)"
        case .channelClosed(let c): return "channel closed by server: \(c)"
        case .channelNotOpen(let id): return "channel \(id) is not open"
        case .channelLimitReached(let max): return "channel limit \(max) reached"
        case .publishNacked: return "publish nacked by broker"
        case .consumerCancelled(let tag): return "consumer \(tag) cancelled by broker"
        case .notConnected: return "not connected (recovering)"
        case .closedByUser: return "connection closed by client"
        case .timedOut(let s): return "timed out: \(s)"
        case .invalidArgument(let s): return "invalid argument: \(s)"
        }
    }

    /// Whether a connection that ended with this error should be re-established.
    public var isRecoverable: Bool {
        switch self {
        case .closedByUser, .invalidURL, .invalidArgument: return false
        default: return true
        }
    }

    /// 405 RESOURCE_LOCKED: the broker closed a channel because another connection holds an
    /// exclusive queue (possibly this client's previous connection, which the broker has not yet
    /// noticed is dead). Transient in the second case, so callers wait it out rather than give up.
    public var isResourceLocked: Bool {
        if case .channelClosed(let reason) = self { return reason.replyCode == ReplyCode.resourceLocked }
        return false
    }
}
