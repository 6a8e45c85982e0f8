/// Identifies a delivery for ack / nack / reject.
///
/// Delivery tags are only meaningful on the connection that produced them. The
/// `epoch` counts connections: after a recovery, acking a tag from an earlier
/// epoch is a no-op instead of a channel error (406 unknown delivery tag).
public struct DeliveryTag: Sendable, Hashable, CustomStringConvertible {
    public let epoch: UInt64
    public let value: UInt64
    public init(epoch: UInt64, value: UInt64) {
        self.epoch = epoch
        self.value = value
    }
    public var description: String { "\(epoch):\(value)" }
}
