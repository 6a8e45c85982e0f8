/// One publishing run.
struct PublishResult: Codable {
    var target: String
    var round: Int
    var clients: Int
    var messagesPerClient: Int
    var connectSeconds: Double
    /// Publishes acknowledged (puback, 202, receipt, confirm), and refused or failed.
    var acknowledged: Int
    var failed: Int
    var errors: [String]
    /// Acknowledged publishes per second, first publish to last acknowledgement.
    var messagesPerSecond: Double
    var ackP50Ms: Double
    var ackP99Ms: Double
    var ackMaxMs: Double
    /// What reached the checker's queue on the broker, and what of the acknowledged did not.
    var delivered: Int
    var lost: Int
    var warrenCPUMicrosPerPublish: Double?
    var brokerCPUMicrosPerPublish: Double?
    var benchCPUMicrosPerPublish: Double?
}
