import AMQPClient
import Testing
import WarrenCore

@Suite("Queue arguments")
struct QueueArgumentsTests {
    /// Quorum queues get a delivery limit no redelivery reaches, never a negative one (3.x
    /// drops at the first return); classic queues refuse the argument and get none.
    @Test func onlyQuorumQueuesGetADeliveryLimitAndItIsPositive() {
        var inbox = InboxSettings()
        inbox.queueType = "quorum"
        #expect(inbox.arguments["x-delivery-limit"] == .int64(QueueArguments.quorumDeliveryLimit))
        #expect(inbox.arguments["x-queue-type"] == .string("quorum") && inbox.arguments["x-max-length"] == .int64(10_000))
        #expect(QueueArguments.quorumDeliveryLimit >= 1_000_000)
        inbox.queueType = "classic"
        #expect(inbox.arguments["x-delivery-limit"] == nil)
        #expect(QueueArguments.typed("classic") == ["x-queue-type": .string("classic")])
    }
}
