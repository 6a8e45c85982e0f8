import AMQPClient
import NIOCore

/// Where the bridge gets its long-lived channels from. No client request opens a channel of its
/// own (docs/protocol.md): declarations, bindings and deletes share administration channels, and
/// consumers share consumption channels, each consumer with its own prefetch.
public protocol ChannelSource: Sendable {
    /// A channel for declarations, bindings and deletes; it never consumes, so a channel error
    /// there (a 404 on a passive declare, a 406 on a mismatched argument) costs no delivery.
    func administration() async throws -> any BrokerChannel
    /// A channel shared by consumers started with this prefetch (per consumer, RabbitMQ's
    /// `basic.qos` with `global = false`), on a connection running on `loop` when there is one
    /// (the consumer's socket's loop: deliveries and acks then stay on it).
    func consumption(prefetch: Int, near loop: (any EventLoop)?) async throws -> any BrokerChannel
}

extension ChannelSource {
    public func consumption(prefetch: Int) async throws -> any BrokerChannel {
        try await consumption(prefetch: prefetch, near: nil)
    }

    /// Runs `body`, an operation on `queue`, on an administration channel, and again on another
    /// when that channel was closed under it by another request's channel error (the broker's
    /// reason names another queue): the channels are shared, and one user's refused declaration
    /// closed the channel under other users' subscriptions in flight, each then answered
    /// `unavailable`. An error about `queue` itself is thrown.
    @discardableResult
    func administering<Result>(queue: String, _ body: (any BrokerChannel) async throws -> Result) async throws -> Result {
        var attempt = 0
        while true {
            do { return try await body(administration()) } catch AMQPError.channelClosed(let reason)
                where attempt < 3 && !reason.replyText.contains("'\(queue)'") {
                attempt += 1
            }
        }
    }
}
