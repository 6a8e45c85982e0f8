/// Why a message was dropped (`warren_dropped_total{reason}`, docs/operations.md). `duplicate`: an inbox
/// delivery whose envelope id the client already holds unacknowledged (an AMQP publisher that
/// sent one `message_id` twice), acked to RabbitMQ as it came; the client's ack of that id
/// settles the one it holds.
public enum DropReason: Int, CaseIterable, Sendable {
    case slowConsumer, tooLarge, forbidden, invalid, unroutable, rateLimited, duplicate
    public var label: String {
        ["slow_consumer", "too_large", "forbidden", "invalid", "unroutable", "rate_limited", "duplicate"][rawValue]
    }
}
