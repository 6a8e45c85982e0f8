import AMQPClient
import Logging
import NIOConcurrencyHelpers
import Testing
@testable import WarrenCore

/// Waits (bounded) until `condition` holds; the writer works on tasks of its own.
func eventually(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<500 {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

@Suite("Store writer")
struct StoreWriterTests {
    static func writer(_ store: FakeStore, batchSize: Int = 100, patterns: [String] = ["#"], queue: String = "warren.store",
                       channels: FakeChannels = FakeChannels(), fence: StoreFence? = nil) async throws -> (StoreWriter, FakeChannel, String) {
        var settings = StoreSettings()
        settings.batchSize = batchSize
        settings.patterns = patterns
        settings.queue = queue
        let channel = FakeChannel("store")
        let writer = StoreWriter(store: store, settings: settings, channel: channel, channels: channels, exchange: "chat",
                                 metrics: StoreMetrics(), fence: fence, logger: Logger(label: "test"))
        try await writer.start()
        return (writer, channel, channel.consumerTags[0])
    }

    static func acks(_ channel: FakeChannel) -> [String] { channel.calls.filter { $0.hasPrefix("ack") } }

    /// A recovery's fence, published to the store's queue through the default exchange, is
    /// recorded with the batch it arrives in (not kept as a message) and acked with it; the
    /// recovery waiting for it goes on. A message of the fence's type routed by the exchange
    /// is no fence.
    @Test func aFenceIsRecordedWithItsBatchAndLetsTheRecoveryOn() async throws {
        let store = FakeStore()
        let fence = StoreFence(store: store, wait: .seconds(5), logger: Logger(label: "test"))
        let (_, channel, consumer) = try await Self.writer(store, fence: fence)
        fence.attach { id in
            channel.deliver(to: consumer, routingKey: "alice.bob", body: "before")
            channel.deliver(to: consumer, routingKey: "warren.store", body: "", properties: BasicProperties(messageID: id, type: StoreFence.messageType),
                            exchange: "")
        }
        #expect(await fence.pass() != nil)
        #expect(store.fences.count == 1)
        #expect(store.batches.flatMap { $0 }.map(\.route) == ["alice.bob"])
        #expect(await eventually { Self.acks(channel).last == "ack 2+" }, "the fence is acked with its batch")
        let forged = UUIDv7Generator().next(nowMilliseconds: 1)
        channel.deliver(to: consumer, routingKey: "room.x", body: "{}", properties: BasicProperties(messageID: forged, type: StoreFence.messageType))
        #expect(await eventually { store.batches.flatMap { $0 }.count == 2 })
        #expect(store.fences.count == 1)
    }

    @Test func acksOnlyAfterCommitAndOnceABatch() async throws {
        let store = FakeStore()
        store.hold(true)
        let (_, channel, consumer) = try await Self.writer(store)
        for n in 1...3 { channel.deliver(to: consumer, routingKey: "alice.bob", body: "m\(n)") }
        #expect(await eventually { store.heldWrites == 1 })
        #expect(Self.acks(channel).isEmpty, "nothing acked before its transaction committed")
        store.release()
        #expect(await eventually { store.heldWrites == 1 }, "what came meanwhile is the next batch")
        #expect(Self.acks(channel) == ["ack 1+"])
        store.release()
        #expect(await eventually { Self.acks(channel) == ["ack 1+", "ack 3+"] }, "one multiple ack for the batch of two")
        #expect(store.batches.map { $0.map(\.route) } == [["alice.bob"], ["alice.bob", "alice.bob"]])
    }

    /// A batch the database refuses for what one message holds (not an outage) is written
    /// again one message at a time: the others are kept and acked, the refused one is acked and
    /// given up, and what comes after is kept. Before, the batch was written again for ever and
    /// nothing after it was kept.
    @Test func aMessageTheDatabaseRefusesIsGivenUpAndTheRestKept() async throws {
        let store = FakeStore()
        store.refuse("poison")
        store.hold(true)
        let (_, channel, consumer) = try await Self.writer(store)
        channel.deliver(to: consumer, routingKey: "alice.bob", body: "m1")
        #expect(await eventually { store.heldWrites == 1 })
        for body in ["m2", "poison", "m4"] { channel.deliver(to: consumer, routingKey: "alice.bob", body: body) }
        store.hold(false)
        store.release()
        #expect(await eventually { Self.acks(channel).count == 4 }, "\(Self.acks(channel))")
        #expect(Self.acks(channel) == ["ack 1+", "ack 2+", "ack 3+", "ack 4+"])
        channel.deliver(to: consumer, routingKey: "alice.bob", body: "m5")
        #expect(await eventually { Self.acks(channel).count == 5 })
        #expect(store.batches.flatMap { $0 }.map(\.envelope).map { $0.contains("poison") } == [false, false, false, false])
        #expect(store.batches.count == 4, "m1, then m2 and m4 alone, then m5: \(store.batches.map(\.count))")
    }

    @Test func transientAndSkippedMessagesAreAckedWithoutAWrite() async throws {
        let store = FakeStore()
        let (_, channel, consumer) = try await Self.writer(store)
        channel.deliver(to: consumer, routingKey: "alice.bob", body: "typing…",
                        properties: BasicProperties(contentType: "text/plain", expiration: "0"))
        channel.deliver(to: consumer, routingKey: "alice.bob", body: "…",
                        properties: BasicProperties(contentType: "text/plain", type: "typing"))
        #expect(Self.acks(channel) == ["ack 1", "ack 2"])
        channel.deliver(to: consumer, routingKey: "alice.bob", body: "kept")
        #expect(await eventually { Self.acks(channel).count == 3 })
        #expect(store.batches.flatMap { $0 }.count == 1)
    }

    /// A routing key that is no route (no client could ask its history; a NUL in it would stop
    /// PostgreSQL from taking the batch), and Warren's own mark with a `from` header or a `type`
    /// holding a NUL, are acked and not kept; a back end's NUL `from` is kept under a name it may have.
    @Test func whatNoRouteOrNameCouldBeIsNotKeptAsItCame() async throws {
        let store = FakeStore()
        let (_, channel, consumer) = try await Self.writer(store)
        channel.deliver(to: consumer, routingKey: "alice.bob\u{0}x", body: "no route")
        channel.deliver(to: consumer, routingKey: "alice bob", body: "no route either")
        let own = EnvelopeTests.sample
        var forged = EnvelopeAMQPMapping.properties(for: own)
        forged.headers?["from"] = .string("al\u{0}ice")
        channel.deliver(to: consumer, routingKey: own.route, body: String(decoding: own.encoded(), as: UTF8.self), properties: forged)
        var forgedType = EnvelopeAMQPMapping.properties(for: own)
        forgedType.type = "te\u{0}xt"
        channel.deliver(to: consumer, routingKey: own.route, body: String(decoding: own.encoded(), as: UTF8.self), properties: forgedType)
        #expect(Self.acks(channel) == ["ack 1", "ack 2", "ack 3", "ack 4"])
        channel.deliver(to: consumer, routingKey: "alice.bob", body: "kept",
                        properties: BasicProperties(headers: ["from": .string("svc\u{0}")], appID: "billing"))
        #expect(await eventually { Self.acks(channel).count == 5 })
        #expect(store.batches.flatMap { $0 }.map(\.sender) == ["billing"])
    }

    /// `store.patterns` narrowed (`#` to `room.#`): the queue is durable and kept `#`, so every
    /// conversation went on being kept. The store records what the queue was bound with; the
    /// next start unbinds what is no longer configured, and whatever a binding nobody recorded
    /// still brings is acked and not kept.
    @Test func aPatternDroppedFromStorePatternsIsUnboundAndNotKept() async throws {
        let store = FakeStore()
        let wide = FakeChannels()
        _ = try await Self.writer(store, channels: wide)
        #expect(wide.admin.calls == ["declare warren.store", "bind warren.store #"])
        #expect(try await store.boundPatterns() == ["warren.store": ["#"]])

        let narrow = FakeChannels()
        let (_, channel, consumer) = try await Self.writer(store, patterns: ["room.#"], channels: narrow)
        #expect(narrow.admin.calls == ["declare warren.store", "bind warren.store room.#", "unbind warren.store #"])
        #expect(try await store.boundPatterns() == ["warren.store": ["room.#"]])
        channel.deliver(to: consumer, routingKey: "alice.bob", body: "private")
        channel.deliver(to: consumer, routingKey: "room.lobby", body: "public")
        #expect(await eventually { Self.acks(channel).count == 2 })
        #expect(store.batches.flatMap { $0 }.map(\.route) == ["room.lobby"])

        // Started again as it is: nothing to unbind, nothing written.
        let same = FakeChannels()
        _ = try await Self.writer(store, patterns: ["room.#"], channels: same)
        #expect(same.admin.calls == ["declare warren.store", "bind warren.store room.#"])

        // `store.queue` renamed: the old queue is unbound (it would gather every message,
        // unconsumed, for good) and forgotten; the new one recorded.
        let renamed = FakeChannels()
        _ = try await Self.writer(store, patterns: ["room.#"], queue: "chat.store", channels: renamed)
        #expect(renamed.admin.calls == ["declare chat.store", "bind chat.store room.#", "unbind warren.store room.#"])
        #expect(try await store.boundPatterns() == ["chat.store": ["room.#"]])
    }

    @Test func aFailedWriteIsRetriedAndAckedOnlyWhenItCommits() async throws {
        let store = FakeStore()
        store.fail(next: 2)
        let (_, channel, consumer) = try await Self.writer(store)
        channel.deliver(to: consumer, routingKey: "alice.bob", body: "m1", messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e")
        #expect(await eventually { store.batches.count == 1 }, "written after two failures")
        #expect(await eventually { Self.acks(channel) == ["ack 1+"] })
        #expect(store.batches[0][0].id == "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e", "the message's own id keys its row")
    }

    @Test func newestTagPerChannelAndConnectionEpoch() {
        let m = StoredMessage(id: "x", route: "a.b", sender: "a", type: "text", ts: 0, envelope: "{}", sortKey: "x")
        let one = FakeChannel("one"), two = FakeChannel("two")
        let items = [(one, 1, 4), (one, 1, 6), (one, 2, 1), (two, 1, 2), (one, 2, 3), (one, 1, 5), (two, 1, 1)].map {
            StoreWriter.Item(message: m, tag: DeliveryTag(epoch: $0.1, value: $0.2), channel: $0.0)
        }
        let newest = StoreWriter.newestTags(items)
        #expect(newest.map(\.tag) == [DeliveryTag(epoch: 1, value: 6), DeliveryTag(epoch: 2, value: 3), DeliveryTag(epoch: 1, value: 2)])
        #expect(newest.map { ($0.channel as? FakeChannel)?.name } == ["one", "one", "two"])
    }
}
