/// STOMP 1.2 frames as RabbitMQ Web-STOMP sends them: `COMMAND\nheaders\n\nbody\0`,
/// possibly several in one WebSocket message, possibly with heart-beat EOLs between them.
public enum StompCommand: Equatable {
    case connected, message, receipt, error, other
}
