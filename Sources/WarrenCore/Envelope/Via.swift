/// The door a message came in by.
public enum Via: String, Sendable, Hashable, CaseIterable {
    case ws
    case poll
    case amqp
}
