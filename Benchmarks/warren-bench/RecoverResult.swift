/// One recovery measurement (`--scenarios recover`): live sockets cut at once while their rooms
/// talk, then resubscribing with `since`.
struct RecoverResult: Codable {
    var store: String
    var sockets: Int
    var rooms: Int
    var rate: Int
    var published: Int
    var publishFailures: Int
    /// Deliveries every socket's room was owed (each message published after it subscribed).
    var expected: Int
    var missed: Int
    /// Of them, what sockets answered `recovered: true` missed (must be 0): the rest is what
    /// sockets told to reload missed.
    var missedByRecovered: Int
    var duplicates: Int
    var recovered: Int
    var reasons: [String: Int]
    /// From the cut to the last resubscription answered, and to the last socket live again
    /// (its first message published after that answer).
    var resubscribedSeconds: Double
    var allLiveSeconds: Double
    /// Messages Warren replayed, store queries it made for them (`warren_recovery_*`).
    var replayed: Int
    var storeQueries: Int
    var queriesPerReconnect: Double
    /// Warren's CPU from the cut until every socket was live, above its rate before the cut,
    /// per replayed message.
    var warrenCPUMicrosPerReplayed: Double?
    var steadyWarrenCPU: Double
    var recoveryWarrenCPU: Double
    var errors: [String]
}
