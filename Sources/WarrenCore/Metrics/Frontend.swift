/// The `frontend` label of docs/operations.md: the door a message came in or went out by.
public enum Frontend: Int, CaseIterable, Sendable {
    case ws, poll, amqp
    public var label: String { ["ws", "poll", "amqp"][rawValue] }

    /// The client door of a request Warren takes in `via` (HTTP requests count as `poll`; what
    /// Warren publishes itself, marked `amqp`, counts as `ws`, as it always has).
    public init(clientDoor via: Via) { self = via == .poll ? .poll : .ws }
}
