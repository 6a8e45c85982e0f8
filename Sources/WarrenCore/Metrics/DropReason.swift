/// Why a message was dropped (`warren_dropped_total{reason}`, DESIGN §7).
public enum DropReason: Int, CaseIterable, Sendable {
    case slowConsumer, tooLarge, forbidden, invalid, unroutable, rateLimited
    public var label: String { ["slow_consumer", "too_large", "forbidden", "invalid", "unroutable", "rate_limited"][rawValue] }
}
