import NIOCore

/// One subscriber of the live fan-out: a session and its subscription id, and the session's
/// receiver and its ``LiveReceiver/liveLoop`` (kept with it, so a delivery needs no lookup
/// and touches nothing of the receiver's before it reaches that loop). Equal by session and
/// subscription id.
public struct LiveSubscriber: Hashable, Sendable {
    public let session: ObjectIdentifier
    public let subscriptionID: String
    let receiver: (any LiveReceiver)?
    let loop: (any EventLoop)?
    /// `loop`'s identity: what a loop's share of a fan-out is picked by (compared without
    /// touching the loop itself).
    let loopID: ObjectIdentifier?

    public init(session: ObjectIdentifier, subscriptionID: String, receiver: (any LiveReceiver)? = nil) {
        self.session = session
        self.subscriptionID = subscriptionID
        self.receiver = receiver
        self.loop = receiver?.liveLoop
        self.loopID = loop.map { ObjectIdentifier($0) }
    }

    public static func == (a: LiveSubscriber, b: LiveSubscriber) -> Bool {
        a.session == b.session && a.subscriptionID == b.subscriptionID
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(session)
        hasher.combine(subscriptionID)
    }
}
