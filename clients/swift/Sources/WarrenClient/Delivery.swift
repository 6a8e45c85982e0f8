/// One message handed to a ``Subscription``'s iteration.
public struct Delivery: Sendable {
    public let envelope: Envelope
    /// RabbitMQ delivered it before (an inbox delivery not acknowledged then).
    public let redelivered: Bool
    /// The subscription's id.
    public let subscription: String
    /// Which connection delivered it (an ack goes back on that one only).
    let epoch: Int
}
