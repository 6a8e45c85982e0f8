import NIOCore
import WarrenCore

/// What an ``HTTPConnection`` needs from the frontend; one per listener, shared by its
/// connections (a class: the configuration inside is kilobytes, not copied per connection).
package final class EdgeContext: Sendable {
    /// Polls, new sessions and publishes, answered by the connection itself; nil on the
    /// operations listener (`http.internal_listen`), whose requests all go to the router.
    let polls: PollRoutes?
    /// Every other endpoint.
    let router: RouterEndpoint
    /// CORS for the answers the connection writes itself; nil when off.
    let cors: CORSPolicy?
    /// WebSocket handshakes are admitted and their connections set up here.
    let webSockets: WebSocketDoor?
    /// Event streams (`GET /v1/sse`) likewise.
    let eventStreams: EventStreamDoor?
    let settings: HTTPConnectionStateMachine.Settings
    /// Request body bytes held by every connection of the process (`http.max_body_bytes_in_flight`).
    let budget: BodyBudget

    init(polls: PollRoutes?, router: RouterEndpoint, cors: CORSPolicy?, webSockets: WebSocketDoor?, eventStreams: EventStreamDoor? = nil,
         authenticator: Authenticator, settings: HTTPConnectionStateMachine.Settings, budget: BodyBudget, metrics: WarrenMetrics)
    {
        self.eventStreams = eventStreams
        self.polls = polls
        self.router = router
        self.cors = cors
        self.webSockets = webSockets
        self.settings = settings
        self.budget = budget
        self.metrics = metrics
        self.authenticator = authenticator
        self.maxBatch = polls?.configuration.poll.maxBatch ?? 1
    }

    // Kept here once: read through `polls` per request, each was a copy of a struct holding
    // the whole configuration (an outlined copy and destroy showed in the poll profile).
    let authenticator: Authenticator
    let maxBatch: Int
    /// Where a parked poll is counted (`warren_connections{frontend="poll"}`): the node's
    /// metrics, read here, not through the poll service's runtime on every poll (an object
    /// both loops share, whose reference count is a side table's: its retain and release took
    /// the runtime's slow path).
    let metrics: WarrenMetrics

    /// The node's poll service, or why there is none (the broker link not up, a drain).
    func service() -> Result<PollService, ProtocolError> {
        guard let polls else { return .failure(ProtocolError(.notFound, "no polling here", ref: nil)) }
        return polls.readyService()
    }

    /// Whether the node drains (an atomic load).
    var isDraining: Bool { polls?.link.isDraining ?? false }
}
