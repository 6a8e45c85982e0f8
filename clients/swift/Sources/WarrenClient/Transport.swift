/// How a client reaches Warren.
public enum Transport: String, Sendable, Hashable {
    /// `GET /v1/ws`.
    case webSocket = "websocket"
    /// HTTP long-polling (`/v1/poll`), where the WebSocket cannot open.
    case polling
}
