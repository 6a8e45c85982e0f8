/// Who publishes in the `publish` scenario (issue 18): through Warren's two doors, and the
/// anchors on the same broker.
enum PublishTarget: String, CaseIterable, Codable {
    /// Warren WebSocket `pub`, each waiting for its `puback`.
    case ws = "ws-publish"
    /// Warren `POST /v1/messages`, each waiting for its 202.
    case http = "http-publish"
    /// Web-STOMP SEND with a receipt (RabbitMQ answers once the broker confirmed).
    case stomp = "stomp-publish"
    /// Plain AMQP with publisher confirms.
    case amqp = "amqp-publish"

    var usesWarren: Bool { self == .ws || self == .http }
}
