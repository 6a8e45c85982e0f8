import AMQPClient
import Logging
import NIOConcurrencyHelpers
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

    /// A channel error closes the live queue's consumption channel: the hub opens another on the
    /// same connection, declares and consumes its queue there (the bindings stay: they are the
    /// queue's), and live delivery resumes.
    @Test func theLiveConsumerMovesToANewChannelWhenTheBrokerClosesItsChannel() async throws {
        let live = FakeChannel("live1"), again = FakeChannel("live2"), binds = FakeChannel("binds")
        let hub = LiveHub(channel: live, bindChannel: binds, reopen: { again }, queue: "warren.live.t", exchange: "chat",
                          metrics: .disabled, logger: Logger(label: "test"))
        try await hub.start()
        let receiver = CollectingLiveReceiver()
        try await hub.subscribe(try TopicPattern("room.x"), subscriber: LiveSubscriber(session: ObjectIdentifier(receiver),
                                                                                       subscriptionID: "r", receiver: receiver))
        live.closeByBroker(406)
        #expect(await eventually { again.consumerTags.count == 1 })
        #expect(again.calls == ["declare warren.live.t", "consume warren.live.t"])
        #expect(binds.calls == ["bind warren.live.t room.x", "bind warren.live.t room.x"])
        again.deliver(to: again.consumerTags[0], routingKey: "room.x", body: "after")
        #expect(receiver.bodies.count == 1 && receiver.bodies[0].contains("after"))
    }

    /// The node's presence queue deleted — and with it, on a node alone, the auto-deleted
    /// presence exchange: presence declares the exchange again before binding its new queue,
    /// then announces its whole state.
    @Test func aDeletedPresenceQueueIsDeclaredAgainWithItsExchange() async throws {
        let channel = FakeChannel("presence")
        let presence = Self.presence(channel, reopen: nil)
        try await presence.start()
        let setUp = ["declare exchange chat.presence", "declare warren.presence.n1", "bind warren.presence.n1 ", "consume warren.presence.n1"]
        #expect(Array(channel.calls.prefix(4)) == setUp)
        channel.cancelByBroker(try #require(channel.consumer(of: "warren.presence.n1")))
        #expect(await eventually { Self.consumes(channel) == 2 && channel.calls.last == "publish " })
        #expect(Array(channel.calls.suffix(5)) == setUp + ["publish "], "set up again, then the state announced")
        presence.stop()
    }

    /// The broker closes the presence channel (an announcement to an exchange deleted meanwhile
    /// answers 404), once as the consumer ends and once more while it is being set up again:
    /// each time a new channel takes its place, and the node hears the others again.
    @Test func thePresenceChannelIsReplacedEachTimeTheBrokerClosesIt() async throws {
        let first = FakeChannel("presence1"), second = FakeChannel("presence2"), third = FakeChannel("presence3")
        let spares = NIOLockedValueBox([second, third])
        let presence = Self.presence(first, reopen: { spares.withLockedValue { $0.removeFirst() } })
        try await presence.start()
        first.closeByBroker(404)
        #expect(await eventually { second.consumerTags.count == 1 })
        second.closeAtNext(404)
        second.cancelByBroker(second.consumerTags[0])
        #expect(await eventually { third.consumerTags.count == 1 && third.calls.last == "publish " })
        let visitor = PresenceAnnouncement.change(node: "n2", entry: PresenceEntry(route: "room.x", user: "visitor"), present: true)
        third.deliver(to: third.consumerTags[0], routingKey: "", body: String(decoding: visitor.encoded(), as: UTF8.self))
        #expect(presence.users(route: "room.x") == ["visitor"])
        presence.stop()
    }

    static func presence(_ channel: FakeChannel, reopen: (@Sendable () async throws -> any BrokerChannel)?) -> Presence {
        let logger = Logger(label: "test")
        return Presence(node: "n1", settings: PresenceSettings(), exchange: "chat.presence", channel: channel, reopen: reopen,
                        publisher: Publisher(channel: FakeChannel("publish"), exchange: "chat", metrics: .disabled, logger: logger),
                        metrics: .disabled, logger: logger)
    }

    /// A bind the broker refused with a channel error closed the binding channel: the next
    /// binding change opens another one instead of failing for good.
    @Test func aClosedBindingChannelIsReplacedAtTheNextBindingChange() async throws {
        let live = FakeChannel("live"), first = FakeChannel("binds1"), second = FakeChannel("binds2")
        let hub = LiveHub(channel: live, bindChannel: first, reopen: { second }, queue: "warren.live.t",
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

    /// A channel error closes the publishing channel: a publish before a new confirm channel
    /// took its place fails; later publishes go through the new one.
    @Test func theBrokerClosingThePublishingChannelOpensAnother() async throws {
        let first = FakeChannel("publish1"), second = FakeChannel("publish2")
        // The new channel opens only once the test has seen a publish fail on the closed one.
        let opens = NIOLockedValueBox(false)
        let publisher = Publisher(channel: first, reopen: {
                                      guard opens.withLockedValue({ $0 }) else { throw AMQPError.notConnected }
                                      return second
                                  }, exchange: "chat", metrics: .disabled, logger: Logger(label: "test"))
        let request = PublishRequest(routes: [try RouteKey("alice.bob")], multicast: false, type: "text", body: .string("hi"),
                                     cid: nil, transient: false, headers: [])
        _ = try await publisher.publish(request, from: "alice", via: .ws, maxMessageBytes: 65536)
        first.closeByBroker(406)
        await #expect(throws: ProtocolError.self) {
            _ = try await publisher.publish(request, from: "alice", via: .ws, maxMessageBytes: 65536)
        }
        opens.withLockedValue { $0 = true }
        #expect(await eventually { publisher.link.channel === second })
        _ = try await publisher.publish(request, from: "alice", via: .ws, maxMessageBytes: 65536)
        #expect(first.calls == ["publish alice.bob"] && second.calls == ["publish alice.bob"])
    }

    /// A publish the broker nacks moves publishing to a fresh channel (RabbitMQ 3.10 can leave a
    /// channel sending to a quorum queue's dead leader); the old one is closed once its confirms
    /// are answered.
    @Test func aNackedPublishMovesPublishingToAFreshChannel() async throws {
        let first = FakeChannel("publish1"), second = FakeChannel("publish2")
        let publisher = Publisher(channel: first, reopen: { second }, exchange: "chat", confirmTimeout: .milliseconds(1),
                                  metrics: .disabled, logger: Logger(label: "test"))
        let request = PublishRequest(routes: [try RouteKey("alice.bob")], multicast: false, type: "text", body: .string("hi"),
                                     cid: nil, transient: false, headers: [])
        first.nackPublishes()
        await #expect(throws: ProtocolError.self) {
            _ = try await publisher.publish(request, from: "alice", via: .ws, maxMessageBytes: 65536)
        }
        #expect(await eventually { publisher.link.channel === second })
        _ = try await publisher.publish(request, from: "alice", via: .ws, maxMessageBytes: 65536)
        #expect(second.calls == ["publish alice.bob"])
        #expect(await eventually { first.calls == ["publish alice.bob", "close"] })
    }

    /// A send that was not confirmed, retried with its cid, is published with the ids its first
    /// try gave each route: what of the first try reached a queue (a message routed to several
    /// queues is nacked when one refuses it) comes again as the same message, not a new one.
    @Test func aRetryOfAnUnconfirmedSendKeepsItsIDs() async throws {
        let first = FakeChannel("publish1"), second = FakeChannel("publish2")
        let publisher = Publisher(channel: first, reopen: { second }, exchange: "chat", confirmTimeout: .milliseconds(1),
                                  metrics: .disabled, logger: Logger(label: "test"))
        let request = PublishRequest(routes: [try RouteKey("alice.bob"), try RouteKey("alice.carol")], multicast: true, type: "text",
                                     body: .string("hi"), cid: "c1", transient: false, headers: [])
        first.nackPublishes()
        await #expect(throws: ProtocolError.self) {
            _ = try await publisher.publish(request, from: "alice", via: .ws, maxMessageBytes: 65536)
        }
        #expect(await eventually { publisher.link.channel === second })
        let ids = try await publisher.publish(request, from: "alice", via: .ws, maxMessageBytes: 65536)
        #expect(first.messageIDs == ids && second.messageIDs == ids, "\(first.messageIDs) then \(second.messageIDs)")
        // Confirmed now: a third try is answered with those ids, publishing nothing.
        #expect(try await publisher.publish(request, from: "alice", via: .ws, maxMessageBytes: 65536) == ids)
        #expect(second.messageIDs.count == 2)
        // Another sender's same cid is another send.
        let bobs = try await publisher.publish(request, from: "bob", via: .ws, maxMessageBytes: 65536)
        #expect(Set(bobs).isDisjoint(with: ids))
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
