/// One row of the report.
struct RunResult: Codable {
    var scenario: String
    var target: String
    var round: Int
    var clients: Int
    var messages: Int
    var connectSeconds: Double
    var connectionsPerSecond: Double
    var expected: Int
    var delivered: Int
    var lost: Int
    var duplicates: Int
    var unexpected: Int
    var errors: [String]
    var deliveriesPerSecond: Double
    var publishFailures: Int
    /// Poll answers received (long-polling only).
    var pollAnswers: Int
    var latencyP50Ms: Double
    var latencyP99Ms: Double
    var latencyMaxMs: Double
    var before: Snapshot
    var connected: Snapshot
    var during: Snapshot
    var after: Snapshot
    /// CPU microseconds per delivery during the message phase. "warren" is the server under
    /// test: Warren, or nginx (master and workers) for the Nchan targets.
    var warrenCPUMicrosPerDelivery: Double?
    /// Long-polling: the server's CPU microseconds per poll answer.
    var warrenCPUMicrosPerAnswer: Double?
    var brokerCPUMicrosPerDelivery: Double?
    var benchCPUMicrosPerDelivery: Double?
    /// Idle runs: RSS growth per connection (bytes) and CPU at rest (CPU-seconds per second).
    var warrenRSSPerConnection: Double?
    var brokerRSSPerConnection: Double?
    var warrenIdleCPU: Double?
    var brokerIdleCPU: Double?
    /// With the store on: the most messages seen waiting in the store queue while messages
    /// flowed, and how long it took to drain once every delivery was in.
    var storeLagMax: Int?
    var storeDrainSeconds: Double?
}
