/// One subscriber of the live fan-out: a session and its subscription id, and the session's
/// receiver (kept with it, so a delivery needs no lookup per subscriber). Equal by session and
/// subscription id.
public struct LiveSubscriber: Hashable, Sendable {
    public let session: ObjectIdentifier
    public let subscriptionID: String
    let receiver: (any LiveReceiver)?

    public init(session: ObjectIdentifier, subscriptionID: String, receiver: (any LiveReceiver)? = nil) {
        self.session = session
        self.subscriptionID = subscriptionID
        self.receiver = receiver
    }

    public static func == (a: LiveSubscriber, b: LiveSubscriber) -> Bool {
        a.session == b.session && a.subscriptionID == b.subscriptionID
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(session)
        hasher.combine(subscriptionID)
    }
}
