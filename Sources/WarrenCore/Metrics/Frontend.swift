/// The `frontend` label of docs/operations.md: the door a message came in or went out by.
public enum Frontend: Int, CaseIterable, Sendable {
    case ws, poll, amqp
    /// Server-Sent Events streams (they only receive: what their clients publish goes through
    /// `POST /v1/messages`, counted as `poll`).
    case sse
    public var label: String { ["ws", "poll", "amqp", "sse"][rawValue] }

    /// The client door of a request Warren takes in `via` (HTTP requests count as `poll`; what
    /// Warren publishes itself, marked `amqp`, counts as `ws`, as it always has).
    public init(clientDoor via: Via) { self = via == .poll ? .poll : .ws }
}
