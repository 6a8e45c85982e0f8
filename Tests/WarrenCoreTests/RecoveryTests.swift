import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import Testing
@testable import WarrenCore

/// Recovery on resubscribe without I/O: a fake broker, an in-memory store whose fences the
/// test records itself (the store's writer, on this node).
@Suite("Recovery on resubscribe")
struct RecoveryTests {
    struct Setup {
        let bridge: FakeBridge
        let store: FakeStore
        let conversations: Conversations
        let output: RecordingOutput
        let session: ClientSession
    }

    /// `duringFence`: what happens between the fence's publish and its recording (messages
    /// routed after the binding, which the seam must not lose or repeat).
    static func setup(user: String = "carol", patterns: [String] = ["#"], maxMessages: Int = 1000,
                      duringFence: (@Sendable (FakeBridge) -> Void)? = nil, fenceFails: Bool = false) async throws -> Setup {
        let store = FakeStore()
        var settings = StoreSettings()
        settings.patterns = patterns
        var recovery = RecoverySettings()
        recovery.maxMessages = maxMessages
        recovery.waitSeconds = 2
        let conversations = Conversations(store: store, settings: settings, recovery: recovery, metrics: StoreMetrics(),
                                          logger: Logger(label: "test"))
        let bridge = try await FakeBridge(conversations: conversations)
        let fence = conversations.fence
        fence.attach { id in
            if fenceFails { throw StoreTestError() }
            duringFence?(bridge)
            fence.recorded([id])
        }
        let output = RecordingOutput()
        let session = ClientSession(runtime: bridge.runtime, user: user, device: "d", rules: AccessPolicy.standard.resolved(for: user),
                                    output: output, logger: Logger(label: "test"))
        return Setup(bridge: bridge, store: store, conversations: conversations, output: output, session: session)
    }

    static func envelope(_ route: String, _ body: String, at ms: Int64) -> Envelope {
        Envelope(id: UUIDv7Generator().next(nowMilliseconds: UInt64(ms)), route: route, from: "alice", via: .ws, ts: ms,
                 body: .string(body))
    }

    static func stored(_ e: Envelope) -> StoredMessage {
        StoredMessage(id: e.id, route: e.route, sender: e.from, type: e.type, ts: e.ts, envelope: String(decoding: e.encoded(), as: UTF8.self),
                      sortKey: SortKey.of(id: e.id, storedAt: e.ts))
    }

    /// A message routed live (Warren's own publish, as another node writes it).
    static func routeLive(_ bridge: FakeBridge, _ e: Envelope) {
        _ = bridge.live.deliver(to: bridge.liveConsumer, routingKey: e.route, body: String(decoding: e.encoded(), as: UTF8.self),
                                properties: EnvelopeAMQPMapping.properties(for: e))
    }

    static func bodies(_ output: RecordingOutput) -> [String] {
        output.json.filter { $0["op"]?.stringValue == "msg" }.compactMap { $0["env"]?["body"]?.stringValue }
    }

    static let now = WallClock.milliseconds()
    static let history = (1...5).map { envelope("room.x", "m\($0)", at: now - 10_000 + Int64($0) * 100) }

    /// Replay from the store, then what was held at the seam, once: m5 came both ways, m6 only
    /// live, m7 after the release.
    @Test func theReplayThenTheHeldLiveDeliveriesThenLiveNothingTwice() async throws {
        let m6 = Self.envelope("room.x", "m6", at: Self.now - 5_000)
        let setup = try await Self.setup(duringFence: { bridge in
            Self.routeLive(bridge, Self.history[4])
            Self.routeLive(bridge, m6)
        })
        try await setup.store.write(Array(Self.history.map(Self.stored)))
        await setup.session.handle(ByteBuffer(string: #"{"op":"sub","id":"r","pattern":"room.x","since":"\#(Self.history[1].id)"}"#))
        let subscribed = try #require(setup.output.json.first)
        #expect(subscribed["op"]?.stringValue == "subscribed" && subscribed["recovered"] == .bool(true) && subscribed["reason"] == nil)
        Self.routeLive(setup.bridge, Self.envelope("room.x", "m7", at: Self.now))
        #expect(Self.bodies(setup.output) == ["m3", "m4", "m5", "m6", "m7"])
        #expect(setup.output.json.filter { $0["op"]?.stringValue == "msg" }.allSatisfy { $0["sub"]?.stringValue == "r" })
        await setup.session.end()
    }

    /// The store ahead of the live path: m6 is written (and replayed) before its live copy comes,
    /// which arrives only after the release — it goes out once; m7, new, goes out.
    @Test func aReplayedMessageThatComesLiveAfterTheReleaseGoesOutOnce() async throws {
        let m6 = Self.envelope("room.x", "m6", at: Self.now - 500)
        let setup = try await Self.setup()
        try await setup.store.write((Self.history + [m6]).map(Self.stored))   // kept while the live queue is behind
        await setup.session.handle(ByteBuffer(string: #"{"op":"sub","id":"r","pattern":"room.x","since":"\#(Self.history[2].id)"}"#))
        #expect(Self.bodies(setup.output) == ["m4", "m5", "m6"])
        Self.routeLive(setup.bridge, m6)
        Self.routeLive(setup.bridge, Self.envelope("room.x", "m7", at: Self.now))
        Self.routeLive(setup.bridge, Self.envelope("room.x", "m8", at: Self.now + 1))
        #expect(Self.bodies(setup.output) == ["m4", "m5", "m6", "m7", "m8"])
        await setup.session.end()
    }

    @Test func theEnvelopeIdOfAMessageFrameIsFoundWithoutAParse() {
        let e = Self.envelope("room.x", "hi", at: Self.now)
        let frame = ByteBuffer(bytes: ServerFrame.message(sub: #"a","env":{"v":1,"id":"forged"#, envelope: e.encoded(), redelivered: false))
        #expect(HeldLiveDeliveries.envelopeID(frame) == e.id)
    }

    /// A wave of recoveries let through by one fence with the same pattern and since: one read;
    /// another fence, or another since, reads again.
    @Test func recoveriesAskingTheSameAtOnceShareOneRead() async {
        let flights = RecoveryFlights()
        let reads = NIOLockedValueBox(0)
        let (gate, open) = AsyncStream.makeStream(of: Void.self)
        let read: @Sendable () async -> RecoveryFlights.Read = {
            reads.withLockedValue { $0 += 1 }
            for await _ in gate { break }
            return .init(sinceRoute: "room.x", recovery: Recovery(queries: 2))
        }
        let wave = (0..<10).map { _ in flights.join("f1 s room.x", read) }
        let later = flights.join("f2 s room.x", read)
        let other = flights.join("f1 t room.x", read)
        #expect(wave.filter(\.joined).count == 9 && !later.joined && !other.joined && flights.count == 3)
        open.finish()
        for flight in wave + [later, other] { #expect(await flight.task.value.recovery.queries == 2) }
        #expect(reads.withLockedValue { $0 } == 3)
        #expect(await flights.read("f1 s room.x", read).recovery.queries == 2)   // over: read again
        #expect(flights.count == 0)
    }

    /// A pattern: the routes it matches, not those its SQL filter also reads (`room.xy`).
    @Test func aPatternReplaysOnlyTheRoutesItMatches() async throws {
        let setup = try await Self.setup()
        let others = [Self.envelope("room.xy.z", "deeper", at: Self.now - 9_000), Self.envelope("roomy.x", "roomy", at: Self.now - 8_000),
                      Self.envelope("room.y", "y", at: Self.now - 7_000)]
        try await setup.store.write((Self.history + others).map(Self.stored))
        await setup.session.handle(ByteBuffer(string: #"{"op":"sub","id":"r","pattern":"room.*","since":"\#(Self.history[3].id)"}"#))
        #expect(Self.bodies(setup.output) == ["m5", "y"])
        await setup.session.end()
    }

    @Test func whyARecoveryIsNotWhole() async throws {
        func answer(_ setup: Setup, _ since: String, pattern: String = "room.x") async -> JSONValue? {
            await setup.session.handle(ByteBuffer(string: #"{"op":"sub","id":"\#(UUIDv7Generator().next(nowMilliseconds: 1).suffix(12))","pattern":"\#(pattern)","since":"\#(since)"}"#))
            return setup.output.json.last { $0["op"]?.stringValue != "msg" }
        }
        let setup = try await Self.setup(patterns: ["room.#", "alice.#"], maxMessages: 2)
        try await setup.store.write(Self.history.map(Self.stored))
        // A random (version 4) id that is not kept places nothing.
        #expect(await answer(setup, "0b6f7a52-3c7e-4d8a-9a51-7c2f0e6d1b23")?["reason"] == .string("unknown_id"))
        // A UUIDv7 of a year ago: older than store.max_age (90 days).
        let old = UUIDv7Generator().next(nowMilliseconds: UInt64(Self.now - 365 * 86_400_000))
        #expect(await answer(setup, old)?["reason"] == .string("retention"))
        // More than recover.max_messages: the newest, and too_many.
        let many = await answer(setup, Self.history[0].id)
        #expect(many?["recovered"] == .bool(false) && many?["reason"] == .string("too_many"))
        #expect(Self.bodies(setup.output) == ["m4", "m5"])
        // Not kept: carol.x is outside store.patterns.
        #expect(await answer(setup, Self.history[3].id, pattern: "carol.x")?["reason"] == .string("not_stored"))
        await setup.session.end()

        let down = try await Self.setup(fenceFails: true)
        try await down.store.write(Self.history.map(Self.stored))
        let unavailable = await answer(down, Self.history[3].id)
        #expect(unavailable?["op"] == .string("subscribed") && unavailable?["reason"] == .string("store_unavailable"))
        await down.session.end()
    }

    /// `since` needs the rights history needs: a message of a route the user may not read is
    /// `forbidden`, and the subscription is not left in place.
    @Test func aSinceOutsideOnesRightsIsForbidden() async throws {
        let setup = try await Self.setup(user: "carol")
        let secret = Self.envelope("alice.bob", "secret", at: Self.now - 1000)
        try await setup.store.write([Self.stored(secret)] + Self.history.map(Self.stored))
        await setup.session.handle(ByteBuffer(string: #"{"op":"sub","id":"r","pattern":"room.x","since":"\#(secret.id)"}"#))
        let error = try #require(setup.output.json.last)
        #expect(error["op"] == .string("error") && error["code"] == .string("forbidden") && error["ref"] == .string("r"))
        // The id is free again, and nothing is delivered under it.
        Self.routeLive(setup.bridge, Self.envelope("room.x", "after", at: Self.now))
        #expect(Self.bodies(setup.output).isEmpty)
        await setup.session.handle(ByteBuffer(string: #"{"op":"sub","id":"r","pattern":"room.x"}"#))
        #expect(setup.output.json.last?["op"] == .string("subscribed"))
        await setup.session.end()
    }

    @Test func sinceIsAMessageIdOnALiveSubscription() throws {
        #expect(throws: ProtocolError.self) { try ClientFrame.parse(Array(#"{"op":"sub","id":"r","pattern":"a.b","since":"nope"}"#.utf8)) }
        #expect(throws: ProtocolError.self) {
            try ClientFrame.parse(Array(#"{"op":"sub","id":"r","pattern":"a.b","mode":"inbox","since":"\#(Self.history[0].id)"}"#.utf8))
        }
    }
}
