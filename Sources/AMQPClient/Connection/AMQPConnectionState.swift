/// Where a connection stands, for observers (health checks, metrics, logs).
public enum AMQPConnectionState: Sendable, Equatable {
    case connecting
    case connected
    /// The link dropped; the client is reconnecting and restoring topology.
    case recovering(AMQPError)
    case closed(AMQPError?)
}
