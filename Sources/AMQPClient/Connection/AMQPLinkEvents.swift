import NIOCore

/// Callbacks from a link to the object that owns it, run on the event loop.
struct AMQPLinkEvents: Sendable {
    var blockedChanged: @Sendable (String?) -> Void = { _ in }
    /// The broker closed a channel with a channel-level error.
    var channelClosed: @Sendable (UInt16, AMQPError) -> Void = { _, _ in }
    var returned: @Sendable (UInt16, AMQPReturnedMessage) -> Void = { _, _ in }
}
