/// What a benchmark WebSocket speaks once upgraded.
public enum SocketDialect: Sendable {
    /// Warren: one subscription of `pattern`, `live`, or `inbox` when `ackEvery` is given (the
    /// deliveries acked in one `ack` frame every `ackEvery` of them, as `amqp-ack` does with `multiple`).
    case warren(pattern: String, ackEvery: Int?)
    /// STOMP 1.2 over RabbitMQ Web-STOMP: CONNECT, then one SUBSCRIBE of `destination` with a receipt.
    case stomp(destination: String)
    /// Connect only (Warren: the upgrade; STOMP: CONNECT), for the idle scenario.
    case idleWarren
    case idleStomp
    /// A greedy Warren client: publishes `perTick` messages to `route` every 10 ms, far over
    /// any sane publish rate, and ignores what it is told.
    case flood(route: String, perTick: Int)
    /// A greedy Warren client: asks for `subscriptions` subscriptions at once.
    case hoard(subscriptions: Int)
    /// Warren presence (docs/protocol.md): one live subscription to `route` with `"presence":true`;
    /// what arrives after `subscribed` (other users' joins and leaves) is not recorded.
    case presence(route: String)
    /// A Warren publisher: on ``BenchStart``, `count` publishes to `route`, each sent when the
    /// one before was acknowledged (`puback`); the recorder gets publish → acknowledgement.
    /// Bodies are stamped `firstSeq + i`.
    case publishWarren(route: String, count: Int, firstSeq: Int)
    /// The same over Web-STOMP: SEND with a receipt (RabbitMQ answers it once the broker
    /// confirmed the message).
    case publishStomp(destination: String, count: Int, firstSeq: Int)
}
