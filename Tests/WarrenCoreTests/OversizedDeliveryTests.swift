import AMQPClient
import Logging
import NIOCore
import Testing
@testable import WarrenCore

/// A plain AMQP publisher may send up to the broker's `max_message_size`; an envelope over
/// `limits.max_message_bytes` goes to no client (it would close every socket it is written to
/// past the outbound hard cap, and an inbox copy would do so again at every reconnect).
@Suite("Messages from the broker over limits.max_message_bytes")
struct OversizedDeliveryTests {
    static let limit = 1024

    @Test func aLiveCopyIsDroppedAndCounted() async throws {
        let live = FakeChannel("live"), binds = FakeChannel("binds")
        let metrics = WarrenMetrics(classifier: RouteClassifier([]))
        let sizeGuard = EnvelopeSizeGuard(maxBytes: Self.limit, logger: Logger(label: "test"))
        let hub = LiveHub(channel: live, bindChannel: binds, queue: "warren.live.t", exchange: "chat", metrics: metrics,
                          sizeGuard: sizeGuard, logger: Logger(label: "test"))
        try await hub.start()
        let receiver = CollectingLiveReceiver()
        try await hub.subscribe(try TopicPattern("room.x"), subscriber: LiveSubscriber(session: ObjectIdentifier(receiver),
                                                                                       subscriptionID: "r", receiver: receiver))
        let consumer = live.consumerTags[0]
        live.deliver(to: consumer, routingKey: "room.x", body: String(repeating: "x", count: Self.limit))
        live.deliver(to: consumer, routingKey: "room.x", body: "sentinel")
        #expect(receiver.bodies.count == 1 && receiver.bodies[0].contains("sentinel"), "\(receiver.bodies.map { $0.prefix(80) })")
        #expect(metrics.droppedCount(.tooLarge) == 1 && sizeGuard.refusedCount == 1)
        // Warren's own publish goes on over this node's limit: another node admitted it under its
        // own (the guarantee to inboxes holds even where nodes' limits differ).
        let own = Envelope(id: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d03", route: "room.x", type: "text", from: "alice", via: .ws, ts: 1,
                           body: .string(String(repeating: "w", count: Self.limit)))
        live.deliver(to: consumer, routingKey: "room.x", body: String(decoding: own.encoded(), as: UTF8.self),
                     properties: EnvelopeAMQPMapping.properties(for: own))
        #expect(receiver.bodies.count == 2 && sizeGuard.refusedCount == 1)
        // Only what is Warren's own: the same mark on a body that is not its envelope is measured
        // like any plain AMQP client's message.
        live.deliver(to: consumer, routingKey: "room.x", body: String(repeating: "w", count: Self.limit),
                     properties: BasicProperties(messageID: own.id, appID: EnvelopeAMQPMapping.appID))
        #expect(receiver.bodies.count == 2 && sizeGuard.refusedCount == 2)
    }

    @Test func anInboxCopyIsRejectedWithoutRequeue() async throws {
        let channels = FakeChannels(), receiver = RecordingInboxReceiver()
        let metrics = WarrenMetrics(classifier: RouteClassifier([]))
        let consumer = InboxConsumer(channels: channels, queue: "warren.inbox.alice.d", exchange: "chat", settings: InboxSettings(),
                                     metrics: metrics, receiver: receiver,
                                     sizeGuard: EnvelopeSizeGuard(maxBytes: Self.limit, logger: Logger(label: "test")))
        try await consumer.startConsuming()
        let channel = channels.consuming(prefetch: InboxSettings().prefetch)
        let tag = channel.consumerTags[0]
        let big = channel.deliver(to: tag, routingKey: "alice.bob", body: String(repeating: "x", count: Self.limit),
                                  messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d01")
        let small = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d02"
        channel.deliver(to: tag, routingKey: "alice.bob", body: "sentinel", messageID: small)
        #expect(receiver.ids == [small], "only the sentinel is handed on")
        #expect(channel.calls.filter { $0.hasPrefix("nack") || $0.hasPrefix("ack") } == ["nack \(big)"], "rejected, not requeued")
        #expect(metrics.droppedCount(.tooLarge) == 1)
        // Nothing of it stays outstanding: closing hands back only the sentinel.
        await consumer.close()
        #expect(channel.calls.filter { $0.hasPrefix("nack") }.count == 2)
    }

    @Test func aStoreCopyIsNotKept() async throws {
        let store = FakeStore()
        let channel = FakeChannel("store")
        let writer = StoreWriter(store: store, settings: StoreSettings(), channel: channel, channels: FakeChannels(), exchange: "chat",
                                 metrics: StoreMetrics(), sizeGuard: EnvelopeSizeGuard(maxBytes: Self.limit, logger: Logger(label: "test")),
                                 logger: Logger(label: "test"))
        try await writer.start()
        let tag = channel.consumerTags[0]
        let big = channel.deliver(to: tag, routingKey: "alice.bob", body: String(repeating: "x", count: Self.limit))
        #expect(channel.calls.last == "ack \(big)", "settled at once, not kept")
        // The next message is kept (the sentinel): the batch written holds it alone.
        channel.deliver(to: tag, routingKey: "alice.bob", body: "sentinel")
        #expect(await eventually { store.batches.count == 1 })
        #expect(store.batches[0].count == 1 && store.batches[0][0].envelope.contains("sentinel"))
    }
}
