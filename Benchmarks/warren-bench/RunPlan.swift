/// What one target run is asked to do.
struct RunPlan: Sendable {
    var scenario: String
    var target: Target
    var clients: Int
    /// The routing key of each message, in publish order (empty: no messages, an idle run).
    var keys: [String]
    /// Deliveries expected in all.
    var expected: Int
    /// Client `i`'s subscription pattern.
    var pattern: @Sendable (Int) -> String
    /// Client `i`'s Nchan channel: the one key its messages are published to.
    var channel: @Sendable (Int) -> String = { _ in "" }
    /// Paced publishing (messages per second), else a window of outstanding confirms.
    var rate: Int?
    /// Idle runs: how long to hold the sockets open.
    var idleSeconds: Int = 0
    /// Idle runs: connect only, no subscription.
    var connectOnly = false
    /// Warren's limits switched on (the bench lifts them otherwise), for the greedy runs.
    var limited = false
    /// Greedy clients run beside the measured ones while the messages flow.
    var abusers = false
    /// Warren's conversation store (off unless the scenario measures it).
    var store = StoreMode.off
}
