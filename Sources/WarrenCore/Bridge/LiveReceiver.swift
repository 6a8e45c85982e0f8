import NIOCore

/// Receives live deliveries for one session.
public protocol LiveReceiver: AnyObject, Sendable {
    /// Called once per matching subscription: on the AMQP event loop, or on ``liveLoop`` when
    /// the receiver has one. Returns the frontend the delivery is counted under, nil when it
    /// was not delivered (the hub counts the fan-out's deliveries once per message, loop and
    /// frontend).
    func deliverLive(_ delivery: LiveDelivery) -> Frontend?

    /// The event loop the hub hands this receiver's live deliveries to (one hand-off per
    /// message and loop, not per receiver), so that the receiver's state is only touched
    /// there; nil: delivered on the AMQP event loop. Read once, when a subscription is added.
    var liveLoop: (any EventLoop)? { get }
}

extension LiveReceiver {
    public var liveLoop: (any EventLoop)? { nil }
}
