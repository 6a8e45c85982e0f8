/// Things an observer may want to know as they happen.
public enum AMQPConnectionEvent: Sendable {
    /// Connected (first time or after a recovery); `epoch` counts the links.
    case connected(epoch: UInt64)
    case recovering(AMQPError)
    /// A recorded entity could not be restored and was skipped.
    case recoveryFailed(entity: String, error: AMQPError)
    case blocked(reason: String)
    case unblocked
    case closed(AMQPError?)
}
