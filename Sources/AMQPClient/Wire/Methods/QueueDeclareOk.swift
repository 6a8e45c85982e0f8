public struct QueueDeclareOk: Sendable, Hashable {
    public var queue: String
    public var messageCount: UInt32
    public var consumerCount: UInt32
    public init(queue: String, messageCount: UInt32, consumerCount: UInt32) {
        self.queue = queue
        self.messageCount = messageCount
        self.consumerCount = consumerCount
    }
}
