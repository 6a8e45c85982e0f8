import Foundation
import Logging
import NIOCore
import NIOWebSocket
import WarrenCore

/// What a WebSocket handshake needs from the frontend, one per server: who may connect
/// (``ConnectionAdmission``), and how an admitted connection's pipeline is set up.
final class WebSocketDoor: Sendable {
    typealias Admitted = ConnectionAdmission.Admitted

    let admission: ConnectionAdmission
    let sockets: OpenSockets
    let logger: Logger
    let maxFrameBytes: Int
    /// A ping every period; a socket that has not answered one by the next is closed, so a
    /// silent client goes within two periods (inside `websocket.idle_timeout`).
    let pingSeconds: Int
    /// How long a close frame waits for the client's before the connection is closed anyway.
    let closeTimeout = TimeAmount.seconds(5)

    init(configuration: BridgeConfiguration, link: BrokerLink, authenticator: Authenticator, sockets: OpenSockets, logger: Logger) {
        admission = ConnectionAdmission(link: link, authenticator: authenticator, frontend: .ws)
        self.sockets = sockets
        self.logger = logger
        maxFrameBytes = configuration.limits.maxFrameBytes
        pingSeconds = min(configuration.websocket.pingInterval, max(1, configuration.websocket.idleTimeout / 2))
    }

    /// Sets up an admitted connection's WebSocket pipeline, after the handler answering the
    /// handshake: NIO's frame decoder and the ``WebSocketConnectionHandler``, which writes
    /// its frames as bytes (``WebSocketWireFrame``).
    func install(_ admitted: Admitted, on pipeline: ChannelPipeline.SynchronousOperations) throws {
        try pipeline.addHandler(ByteToMessageHandler(WebSocketFrameDecoder(maxFrameSize: maxFrameBytes)))
        try pipeline.addHandler(WebSocketConnectionHandler(door: self, admitted: admitted))
    }
}
