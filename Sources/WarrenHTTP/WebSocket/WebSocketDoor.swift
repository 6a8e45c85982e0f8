import Foundation
import Logging
import NIOCore
import NIOWebSocket
import WarrenCore

/// What a WebSocket handshake needs from the frontend, one per server: who may connect
/// (docs/protocol.md), and how an admitted connection's pipeline is set up. A refusal is an HTTP
/// answer with the status and JSON error body of §5 — 401 a bad or missing token, 400 a bad
/// `user` or `device` word, 429 over the user's connection limit, 503 draining or the broker
/// link down — so a client can tell "refresh the token" from "retry later".
final class WebSocketDoor: Sendable {
    /// An admitted connection: its user's connection slot is taken (``release(_:)`` gives it
    /// back if the socket never opens; the connection handler does when it closes).
    struct Admitted: Sendable {
        let identity: ClientIdentity
        let expiresAt: Date?
        let runtime: BridgeRuntime
    }

    struct Refusal: Error, Sendable {
        let status: Int
        let code: ErrorCode
        let message: String
    }

    let link: BrokerLink
    let authenticator: Authenticator
    let sockets: OpenSockets
    let logger: Logger
    let maxFrameBytes: Int
    /// A ping every period; a socket that has not answered one by the next is closed, so a
    /// silent client goes within two periods (inside `websocket.idle_timeout`).
    let pingSeconds: Int
    /// How long a close frame waits for the client's before the connection is closed anyway.
    let closeTimeout = TimeAmount.seconds(5)

    init(configuration: BridgeConfiguration, link: BrokerLink, authenticator: Authenticator, sockets: OpenSockets, logger: Logger) {
        self.link = link
        self.authenticator = authenticator
        self.sockets = sockets
        self.logger = logger
        maxFrameBytes = configuration.limits.maxFrameBytes
        pingSeconds = min(configuration.websocket.pingInterval, max(1, configuration.websocket.idleTimeout / 2))
    }

    /// Admission without suspending, when the identity is known (none mode, a token verified
    /// before); nil when the token must be verified first (``admit(query:authorization:)``).
    func admitNow(query: Query, authorization: String?) -> Result<Admitted, Refusal>? {
        guard let runtime = accepting() else { return .failure(Self.unavailable) }
        guard let (identity, expiresAt) = authenticator.known(query: query, authorization: authorization) else { return nil }
        return take(identity, expiresAt, runtime)
    }

    func admit(query: Query, authorization: String?) async -> Result<Admitted, Refusal> {
        guard accepting() != nil else { return .failure(Self.unavailable) }
        let identity: ClientIdentity
        let expiresAt: Date?
        do {
            (identity, expiresAt) = try await authenticator.authenticate(query: query, authorization: authorization)
        } catch {
            return .failure(Refusal(status: error.status, code: error.code, message: error.message))
        }
        // Checked again: the link may have gone down while the token was verified.
        guard let runtime = accepting() else { return .failure(Self.unavailable) }
        return take(identity, expiresAt, runtime)
    }

    /// Gives back the connection slot of a connection that never opened.
    func release(_ admitted: Admitted) { admitted.runtime.users.closeConnection(admitted.identity.user) }

    /// Sets up an admitted connection's WebSocket pipeline, after the handler answering the
    /// handshake: NIO's frame decoder and the ``WebSocketConnectionHandler``, which writes
    /// its frames as bytes (``WebSocketWireFrame``).
    func install(_ admitted: Admitted, on pipeline: ChannelPipeline.SynchronousOperations) throws {
        try pipeline.addHandler(ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: maxFrameBytes)))
        try pipeline.addHandler(WebSocketConnectionHandler(door: self, admitted: admitted))
    }

    private static let unavailable = Refusal(status: 503, code: .unavailable, message: "not accepting connections")

    private func accepting() -> BridgeRuntime? {
        guard !link.isDraining, link.isBrokerUp else { return nil }
        return link.runtime
    }

    private func take(_ identity: ClientIdentity, _ expiresAt: Date?, _ runtime: BridgeRuntime) -> Result<Admitted, Refusal> {
        guard runtime.users.openConnection(identity.user) else {
            runtime.metrics.limitHit(.ws, .connections)
            return .failure(Refusal(status: 429, code: .rateLimited, message: "at most \(runtime.users.maxConnections) connections (WebSockets and poll sessions) per user on this node"))
        }
        return .success(Admitted(identity: identity, expiresAt: expiresAt, runtime: runtime))
    }
}
