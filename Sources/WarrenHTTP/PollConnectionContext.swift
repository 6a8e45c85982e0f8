import NIOCore
import WarrenCore

/// What ``PollConnection`` needs from the frontend; one per server, shared by its
/// connections (a class: the configuration inside is kilobytes, not copied per connection).
final class PollConnectionContext: Sendable {
    let routes: PollRoutes
    /// CORS is configured: requests from other origins take the router (its middleware answers them).
    let cors: Bool
    /// A connection with no request for this long is closed (`http.idle_timeout`).
    let idleTimeout: TimeAmount
    /// WebSocket handshakes are admitted and their connections set up here.
    let webSockets: WebSocketDoor

    init(routes: PollRoutes, cors: Bool, idleTimeout: TimeAmount, webSockets: WebSocketDoor) {
        self.routes = routes
        self.cors = cors
        self.idleTimeout = idleTimeout
        self.webSockets = webSockets
        self.authenticator = routes.authenticator
        self.maxBatch = routes.configuration.poll.maxBatch
        self.maxBodyBytes = routes.support.maxBodyBytes
        self.metrics = routes.link.metrics
    }

    // Kept here once: read through `routes` per request, each was a copy of a struct holding
    // the whole configuration (an outlined copy and destroy showed in the poll profile).
    let authenticator: Authenticator
    let maxBatch: Int
    let maxBodyBytes: Int
    /// Where a poll being served is counted (`warren_connections{frontend="poll"}`): the node's
    /// metrics, read here, not through the poll service's runtime on every poll (an object
    /// both loops share, whose reference count is a side table's: its retain and release took
    /// the runtime's slow path).
    let metrics: WarrenMetrics
    /// The node's poll service, nil while the broker link is not up or the node drains.
    func service() -> PollService? { routes.readyService() }

    /// Whether the node drains (an atomic load).
    var isDraining: Bool { routes.link.isDraining }
}
