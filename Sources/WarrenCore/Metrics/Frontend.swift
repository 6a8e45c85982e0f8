/// The `frontend` label of DESIGN §7: the door a message came in or went out by.
public enum Frontend: Int, CaseIterable, Sendable {
    case ws, poll, amqp
    public var label: String { ["ws", "poll", "amqp"][rawValue] }
}
