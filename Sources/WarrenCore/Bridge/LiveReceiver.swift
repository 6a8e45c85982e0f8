/// Receives live deliveries for one session.
public protocol LiveReceiver: AnyObject, Sendable {
    /// Called on the AMQP event loop, once per matching subscription. Returns the frontend the
    /// delivery is counted under, nil when it was not delivered (the hub counts the fan-out's
    /// deliveries once per message and frontend).
    func deliverLive(_ delivery: LiveDelivery) -> Frontend?
}
