import AMQPClient
import NIOConcurrencyHelpers
import NIOCore
import Testing
@testable import WarrenCore

/// A client that never acks must not make RabbitMQ close the consumption channel it shares with
/// other clients (`consumer_timeout`): what it holds past `inbox.ack_timeout` goes back and
/// comes again. Sweeps are run by hand here (the timeout is an hour, so the timer never does).
@Suite("Inbox deliveries held past the ack timeout")
struct InboxAckTimeoutTests {
    @Test func aDeliveryHeldFourSweepsGoesBackAndAnAckedOneDoesNot() async throws {
        var settings = InboxSettings()
        settings.ackTimeout = 3600
        let channels = FakeChannels(), receiver = RecordingInboxReceiver()
        let consumer = InboxConsumer(channels: channels, queue: "warren.inbox.alice.d", exchange: "chat", settings: settings,
                                     metrics: .disabled, receiver: receiver)
        try await consumer.startConsuming()
        let channel = channels.consuming(prefetch: settings.prefetch)
        let tag = channel.consumerTags[0]
        let held = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d01", acked = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d02"
        let t1 = channel.deliver(to: tag, routingKey: "alice.bob", body: "held", messageID: held)
        let t2 = channel.deliver(to: tag, routingKey: "alice.bob", body: "acked", messageID: acked)
        #expect(consumer.sweep() == 0)
        #expect(consumer.ack(envelopeID: acked))
        // Delivered after this sweep: it goes back four sweeps later than the first two.
        let t3 = channel.deliver(to: tag, routingKey: "alice.bob", body: "later", messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d03")
        #expect(consumer.sweep() == 0 && consumer.sweep() == 0)
        #expect(!channel.calls.contains { $0.hasPrefix("nack") }, "nothing goes back before three quarters of the timeout")
        #expect(consumer.sweep() == 1)
        #expect(channel.calls.filter { $0.hasPrefix("nack") || $0.hasPrefix("ack") } == ["ack \(t2)", "nack \(t1) requeue"])
        #expect(receiver.handedBack == [1])
        #expect(!consumer.ack(envelopeID: held), "a delivery handed back is no longer the client's to ack")

        // RabbitMQ delivers it again; the client gets it marked redelivered and can ack it.
        let t4 = channel.deliver(to: tag, routingKey: "alice.bob", body: "held", messageID: held, redelivered: true)
        #expect(receiver.ids.last == held && receiver.redelivered.last == true)
        #expect(consumer.sweep() == 1, "the later one goes back at its fourth sweep")
        #expect(channel.calls.last == "nack \(t3) requeue")
        #expect(consumer.ack(envelopeID: held))
        #expect(channel.calls.last == "ack \(t4)")
        await consumer.close()
    }

    @Test func aSessionCountsWhatWentBack() async throws {
        var inbox = InboxSettings()
        inbox.ackTimeout = 3600
        let bridge = try await FakeBridge(inbox: inbox, metrics: WarrenMetrics(classifier: RouteClassifier([])))
        let out = RecordingOutput()
        let alice = ClientSession(runtime: bridge.runtime, user: "alice", device: "d",
                                  rules: AccessPolicy.standard.resolved(for: "alice"), output: out, logger: .init(label: "test"))
        alice.inboxHandedBack(count: 3)
        #expect(bridge.runtime.metrics.limitHitCount(.ws, .ackTimeout) == 3)
        await alice.end()
    }
}
