import AMQPClient
import Logging
import NIOCore
import Testing
@testable import WarrenCore

/// What the broker can end on its own — a consumer (its queue deleted), a channel (a channel
/// error) — and how the node carries on, event by event on the fake broker.
@Suite("Consumers and channels the broker ends")
struct BrokerEndingTests {
    static func consumes(_ channel: FakeChannel) -> Int { channel.calls.filter { $0.hasPrefix("consume") }.count }

    /// The live queue deleted: the broker cancels the node's live consumer; the hub declares the
    /// queue again, binds what its subscribers need and consumes it, and live delivery resumes.
    @Test func theLiveConsumerIsSetUpAgainAfterTheBrokerCancelledIt() async throws {
        let bridge = try await FakeBridge()
        let out = RecordingOutput()
        let alice = ClientSession(runtime: bridge.runtime, user: "alice", device: "d",
                                  rules: AccessPolicy.standard.resolved(for: "alice"), output: out, logger: Logger(label: "test"))
        await alice.handle(ByteBuffer(string: #"{"op":"sub","id":"r","pattern":"room.x"}"#))
        #expect(bridge.binds.calls == ["bind warren.live.test room.x"])

        bridge.live.cancelByBroker(bridge.liveConsumer)
        #expect(await eventually { Self.consumes(bridge.live) == 2 && bridge.live.consumerTags.count == 1 })
        #expect(bridge.live.calls == ["declare warren.live.test", "consume warren.live.test",
                                      "declare warren.live.test", "consume warren.live.test"])
        #expect(bridge.binds.calls == ["bind warren.live.test room.x", "bind warren.live.test room.x"],
                "the subscribers' pattern is bound again")
        bridge.live.deliver(to: bridge.liveConsumer, routingKey: "room.x", body: "after")
        #expect(out.json.last?["env"]?["body"]?.stringValue == "after")
        await alice.end()
    }

    /// A bind the broker refused with a channel error closed the binding channel: the next
    /// binding change opens another one instead of failing for good.
    @Test func aClosedBindingChannelIsReplacedAtTheNextBindingChange() async throws {
        let live = FakeChannel("live"), first = FakeChannel("binds1"), second = FakeChannel("binds2")
        let hub = LiveHub(channel: live, bindChannel: first, reopenBindChannel: { second }, queue: "warren.live.t",
                          exchange: "chat", metrics: .disabled, logger: Logger(label: "test"))
        try await hub.start()
        let owner = RecordingOutput()
        try await hub.subscribe(try TopicPattern("room.a"), subscriber: LiveSubscriber(session: ObjectIdentifier(owner), subscriptionID: "a"))
        first.closeByBroker(404)
        try await hub.subscribe(try TopicPattern("room.b"), subscriber: LiveSubscriber(session: ObjectIdentifier(owner), subscriptionID: "b"))
        #expect(first.calls == ["bind warren.live.t room.a"])
        #expect(second.calls == ["bind warren.live.t room.b"])
        #expect(hub.currentBindings.own == ["room.a", "room.b"])
    }

    /// A channel error closes the publishing channel: a new confirm channel takes its place and
    /// later publishes go through it. Without a way to reopen, nothing spins.
    @Test func theBrokerClosingThePublishingChannelOpensAnother() async throws {
        let first = FakeChannel("publish1"), second = FakeChannel("publish2")
        let publisher = Publisher(channel: first, reopen: { second }, exchange: "chat", metrics: .disabled, logger: Logger(label: "test"))
        let request = PublishRequest(routes: [try RouteKey("alice.bob")], multicast: false, type: "text", body: .string("hi"),
                                     cid: nil, transient: false, headers: [])
        _ = try await publisher.publish(request, from: "alice", via: .ws, maxMessageBytes: 65536)
        first.closeByBroker(406)
        await #expect(throws: ProtocolError.self) {
            _ = try await publisher.publish(request, from: "alice", via: .ws, maxMessageBytes: 65536)
        }
        #expect(await eventually { publisher.link.channel === second })
        _ = try await publisher.publish(request, from: "alice", via: .ws, maxMessageBytes: 65536)
        #expect(first.calls == ["publish alice.bob"] && second.calls == ["publish alice.bob"])
    }

    /// `warren.store` deleted: the writer declares, binds and consumes it again, and what comes
    /// next is stored.
    @Test func theStoreConsumerIsSetUpAgainAfterTheBrokerCancelledIt() async throws {
        let store = FakeStore()
        let (_, channel, consumer) = try await StoreWriterTests.writer(store)
        channel.cancelByBroker(consumer)
        #expect(await eventually { Self.consumes(channel) == 2 && channel.consumerTags.count == 1 })
        channel.deliver(to: channel.consumerTags[0], routingKey: "alice.bob", body: "after")
        #expect(await eventually { store.batches.flatMap { $0 }.count == 1 })
        #expect(await eventually { StoreWriterTests.acks(channel) == ["ack 1+"] })
    }

    /// The broker closes the writer's channel (an ack past its `consumer_timeout`, say) while a
    /// batch is being written: the writer consumes again on a new channel; the batch, committed,
    /// is acked on the closed channel (dropped there, never on the new one, where its tag would
    /// be unknown); the redelivered copies are written again and acked on the new channel.
    @Test func theStoreConsumerMovesToANewChannelWhenTheBrokerClosesItsChannel() async throws {
        let store = FakeStore()
        store.hold(true)
        let first = FakeChannel("store1"), second = FakeChannel("store2")
        let writer = StoreWriter(store: store, settings: StoreSettings(), channel: first, reopen: { second },
                                 channels: FakeChannels(), exchange: "chat", metrics: StoreMetrics(), logger: Logger(label: "test"))
        try await writer.start()
        first.deliver(to: first.consumerTags[0], routingKey: "alice.bob", body: "m1", messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d90")
        #expect(await eventually { store.heldWrites == 1 })
        first.closeByBroker(406)
        #expect(await eventually { second.consumerTags.count == 1 })
        store.release()
        store.hold(false)
        #expect(await eventually { store.batches.count == 1 })
        second.deliver(to: second.consumerTags[0], routingKey: "alice.bob", body: "m1", messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d90",
                       redelivered: true)
        second.deliver(to: second.consumerTags[0], routingKey: "alice.bob", body: "m2")
        #expect(await eventually { StoreWriterTests.acks(second) == ["ack 2+"] || StoreWriterTests.acks(second) == ["ack 1+", "ack 2+"] })
        #expect(StoreWriterTests.acks(first).isEmpty, "a closed channel takes no ack")
        #expect(store.batches.flatMap { $0 }.map(\.envelope).count == 3, "the redelivered message is written again (its row is keyed by id)")
        await writer.stop()
    }

    /// The broker closes the consumption channel the inboxes share (a channel error: its
    /// `consumer_timeout` below `inbox.ack_timeout`, say): each inbox consumes again on a new
    /// channel without a word to its client; what the closed channel held comes again,
    /// redelivered, and is acked on the new channel.
    @Test func inboxesMoveToANewChannelWhenTheBrokerClosesTheirs() async throws {
        let bridge = try await FakeBridge()
        let outA = RecordingOutput(), outB = RecordingOutput()
        let alice = ClientSession(runtime: bridge.runtime, user: "alice", device: "d",
                                  rules: AccessPolicy.standard.resolved(for: "alice"), output: outA, logger: Logger(label: "test"))
        let bob = ClientSession(runtime: bridge.runtime, user: "bob", device: "d",
                                rules: AccessPolicy.standard.resolved(for: "bob"), output: outB, logger: Logger(label: "test"))
        await alice.handle(ByteBuffer(string: ##"{"op":"sub","id":"in","pattern":"#.alice.#","mode":"inbox"}"##))
        await bob.handle(ByteBuffer(string: ##"{"op":"sub","id":"in","pattern":"#.bob.#","mode":"inbox"}"##))
        let first = bridge.channels.consuming(prefetch: InboxSettings().prefetch)
        let id = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d11"
        first.deliver(to: try #require(first.consumer(of: "warren.inbox.alice.d")), routingKey: "alice.bob", body: "held", messageID: id)

        first.closeByBroker(406)
        #expect(await eventually { bridge.channels.consuming(prefetch: InboxSettings().prefetch).consumerTags.count == 2 })
        let second = bridge.channels.consuming(prefetch: InboxSettings().prefetch)
        #expect(second !== first)
        #expect(bridge.channels.admin.calls.filter { $0 == "declare warren.inbox.alice.d" }.count == 2,
                "the queue is seen to be there before consuming it again")
        let t = second.deliver(to: try #require(second.consumer(of: "warren.inbox.alice.d")), routingKey: "alice.bob", body: "held",
                               messageID: id, redelivered: true)
        #expect(outA.json.last?["redelivered"] == .bool(true))
        await alice.handle(ByteBuffer(string: #"{"op":"ack","id":"\#(id)"}"#))
        #expect(second.calls.last == "ack \(t)")
        second.deliver(to: try #require(second.consumer(of: "warren.inbox.bob.d")), routingKey: "bob.carol", body: "after")
        #expect(outB.json.last?["env"]?["body"]?.stringValue == "after")
        #expect(!(outA.json + outB.json).contains { $0["op"]?.stringValue == "error" }, "no client was told anything")
        await alice.end()
        await bob.end()
    }

    /// A session that ended while its inbox was moving to a new channel does not consume again.
    @Test func anInboxStoppedWhileMovingStaysStopped() async throws {
        let channels = FakeChannels(), receiver = RecordingInboxReceiver()
        let consumer = InboxConsumer(channels: channels, queue: "warren.inbox.alice.d", exchange: "chat", settings: InboxSettings(),
                                     metrics: .disabled, receiver: receiver)
        try await consumer.startConsuming()
        let first = channels.consuming(prefetch: InboxSettings().prefetch)
        channels.admin.failNext(.notConnected)
        first.closeByBroker(406)
        #expect(consumer.isConsuming, "moving")
        await consumer.stop()
        #expect(await eventually { !consumer.isConsuming }, "the move ends")
        #expect(channels.consuming(prefetch: InboxSettings().prefetch).consumerTags.isEmpty)
        #expect(receiver.ids.isEmpty)
    }
}
