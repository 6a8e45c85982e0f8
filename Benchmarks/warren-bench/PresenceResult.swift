/// One presence measurement (docs/protocol.md, issue 15).
struct PresenceResult: Codable {
    var users: Int
    var rooms: Int
    var nodes: Int
    var setupSeconds: Double
    var queries: Int
    var queryP50Ms: Double
    var queryP99Ms: Double
    var queryMaxMs: Double
    var queryErrors: Int
    var restSeconds: Int
    /// Announcements crossing the broker's presence exchange at rest, per second, and their bytes.
    var restMessagesPerSecond: Double
    var restBytesPerSecond: Double
    /// Each node's CPU at rest (CPU-seconds per second) and RSS.
    var nodeIdleCPU: [Double]
    var nodeRSSMiB: [Double]
}
