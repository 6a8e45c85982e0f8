import AMQPClient
import NIOCore

/// Receives inbox deliveries for one session.
public protocol InboxReceiver: AnyObject, Sendable {
    func deliverInbox(envelopeID: String, envelope: ByteBuffer, routeKey: String, routeClass: RouteClass, redelivered: Bool,
                      acceptedAt: Int64)
    func inboxEnded(_ error: AMQPError?)
    /// `count` deliveries held unacknowledged past `inbox.ack_timeout` went back to RabbitMQ.
    func inboxHandedBack(count: Int)
}
