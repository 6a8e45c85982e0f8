/// Where the bridge gets its long-lived channels from. No client request opens a channel of its
/// own (DESIGN §3): declarations, bindings and deletes share administration channels, and
/// consumers share consumption channels, each consumer with its own prefetch.
public protocol ChannelSource: Sendable {
    /// A channel for declarations, bindings and deletes; it never consumes, so a channel error
    /// there (a 404 on a passive declare, a 406 on a mismatched argument) costs no delivery.
    func administration() async throws -> any BrokerChannel
    /// A channel shared by consumers started with this prefetch (per consumer, RabbitMQ's
    /// `basic.qos` with `global = false`).
    func consumption(prefetch: Int) async throws -> any BrokerChannel
}
