import AMQPClient
import NIOCore
import Testing
@testable import WarrenCore

/// An AMQP publisher that retries with the same `message_id` puts two copies with one envelope
/// id into an inbox. The client must get the id once, and its one ack must leave no delivery
/// outstanding on the shared consumption channel.
@Suite("Inbox deliveries with an envelope id already outstanding")
struct InboxDuplicateTests {
    @Test func aSecondCopyIsSettledAtOnceAndTheClientsAckSettlesTheFirst() async throws {
        let channels = FakeChannels(), receiver = RecordingInboxReceiver()
        let metrics = WarrenMetrics(classifier: RouteClassifier([]))
        let consumer = InboxConsumer(channels: channels, queue: "warren.inbox.alice.d", exchange: "chat", settings: InboxSettings(),
                                     metrics: metrics, receiver: receiver)
        try await consumer.startConsuming()
        let channel = channels.consuming(prefetch: InboxSettings().prefetch)
        let tag = channel.consumerTags[0]
        let id = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d01", other = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d02"
        let first = channel.deliver(to: tag, routingKey: "alice.bob", body: "hi", messageID: id)
        let copy = channel.deliver(to: tag, routingKey: "alice.bob", body: "hi", messageID: id)
        let next = channel.deliver(to: tag, routingKey: "alice.bob", body: "and", messageID: other)
        #expect(receiver.ids == [id, other], "the copy is not handed on")
        #expect(channel.calls.filter { $0.hasPrefix("ack") } == ["ack \(copy)"], "the copy is settled as it comes")
        #expect(metrics.droppedCount(.duplicate) == 1)

        #expect(consumer.ack(envelopeID: id))
        #expect(channel.calls.last == "ack \(first)", "the client's ack settles the delivery it holds")
        #expect(!consumer.ack(envelopeID: id), "nothing is left under that id")

        // Once the first is settled, the id is free again: a later copy is handed on (and the
        // client, which saw it, acks it).
        let later = channel.deliver(to: tag, routingKey: "alice.bob", body: "hi", messageID: id)
        #expect(receiver.ids == [id, other, id])
        #expect(consumer.ack(envelopeID: id))
        #expect(channel.calls.last == "ack \(later)")

        // Closing hands back exactly what is still outstanding: the other message, once.
        await consumer.close()
        #expect(channel.calls.filter { $0.hasPrefix("nack") } == ["nack \(next) requeue"])
    }

    /// After a connection recovery (a new epoch of the same channel) the delivery held from
    /// before is dead — the broker took it back — and the copy that comes is it again: handed
    /// on, redelivered, and the client's ack settles it. (A channel closed and replaced is the
    /// same case: `BrokerEndingTests`.)
    @Test func aCopyFromAfterARecoveryReplacesTheDeadOne() async throws {
        let channels = FakeChannels(), receiver = RecordingInboxReceiver()
        let consumer = InboxConsumer(channels: channels, queue: "warren.inbox.alice.d", exchange: "chat", settings: InboxSettings(),
                                     metrics: .disabled, receiver: receiver)
        try await consumer.startConsuming()
        let channel = channels.consuming(prefetch: InboxSettings().prefetch)
        let tag = channel.consumerTags[0]
        let id = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d11"
        channel.deliver(to: tag, routingKey: "alice.bob", body: "hi", messageID: id)
        let again = channel.deliver(to: tag, routingKey: "alice.bob", body: "hi", messageID: id, redelivered: true, epoch: 2)
        #expect(receiver.ids == [id, id] && receiver.redelivered == [false, true])
        #expect(!channel.calls.contains { $0.hasPrefix("ack") }, "nothing settled on arrival")
        #expect(consumer.ack(envelopeID: id))
        #expect(channel.calls.last == "ack \(again)")
        await consumer.close()
    }
}
