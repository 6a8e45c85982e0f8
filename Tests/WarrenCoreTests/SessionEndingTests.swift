import Logging
import Testing
@testable import WarrenCore

/// A connection that ends while one of its subscriptions is being set up with the broker (a
/// page reloaded mid-subscribe): nothing of that subscription may outlive the session.
@Suite("A session ending during a subscription")
struct SessionEndingTests {
    let rules = AccessPolicy.standard.resolved(for: "carol")

    func session(_ bridge: FakeBridge, output: RecordingOutput = RecordingOutput()) -> ClientSession {
        ClientSession(runtime: bridge.runtime, user: "carol", device: "web", rules: rules, output: output, logger: Logger(label: "test"))
    }

    /// Runs `subscribe`, ends the session while its broker call is held at `gate`, lets the call
    /// go on, and expects the subscription to be refused. `end()` is not awaited before the gate
    /// opens: one that waited for the subscription would never return.
    func endWhileHeld(_ session: ClientSession, gate: CallGate, _ subscribe: @escaping @Sendable () async throws -> Void) async {
        let subscribing = Task { try await subscribe() }
        await gate.reached()
        let ending = Task { await session.end() }
        #expect(await eventually { session.hasEnded })
        gate.open()
        await ending.value
        await #expect(throws: ProtocolError.self) { try await subscribing.value }
    }

    /// Held at the inbox's declaration (before the session has an inbox) or at its binding (the
    /// session has it, and `end()` closes it): either way no consumer is left on the queue.
    @Test(arguments: ["declare warren.inbox.carol.web", "bind warren.inbox.carol.web"])
    func anInboxSubscriptionLeavesNoConsumerBehind(heldAt call: String) async throws {
        let bridge = try await FakeBridge()
        let session = session(bridge)
        await endWhileHeld(session, gate: bridge.channels.admin.hold(call)) {
            try await session.subscribe(id: "in", pattern: try TopicPattern("#.carol.#"), mode: .inbox)
        }
        let consume = bridge.channels.consuming(prefetch: InboxSettings().prefetch)
        #expect(consume.consumer(of: "warren.inbox.carol.web") == nil, "\(consume.calls)")
    }

    /// The leave `end()` owes comes after the join, whichever finishes first.
    @Test func aPresenceSubscriptionLeavesNoOneOnline() async throws {
        let presence = BrokerEndingTests.presence(FakeChannel("presence"), reopen: nil)
        let bridge = try await FakeBridge(presence: presence)
        let session = session(bridge)
        await endWhileHeld(session, gate: bridge.binds.hold("bind warren.live.test room.x")) {
            try await session.subscribe(id: "r", pattern: try TopicPattern("room.x"), mode: .live, presence: true)
        }
        #expect(presence.users(route: "room.x").isEmpty)
        #expect(bridge.runtime.hub.patternCount == 0)
        #expect(bridge.binds.calls == ["bind warren.live.test room.x", "unbind warren.live.test room.x"])
        // A session that stays sees the same subscription go through.
        let staying = self.session(bridge)
        try await staying.subscribe(id: "r", pattern: try TopicPattern("room.x"), mode: .live, presence: true)
        #expect(presence.users(route: "room.x") == ["carol"])
        await staying.end()
        #expect(presence.users(route: "room.x").isEmpty)
        presence.stop()
    }

    /// A consumer whose session is gone without closing it hands what comes back and stops.
    @Test func anInboxWithoutItsSessionHandsDeliveriesBack() async throws {
        let bridge = try await FakeBridge()
        var session: ClientSession? = self.session(bridge)
        try await session!.subscribe(id: "in", pattern: try TopicPattern("#.carol.#"), mode: .inbox)
        let consume = bridge.channels.consuming(prefetch: InboxSettings().prefetch)
        let tag = try #require(consume.consumer(of: "warren.inbox.carol.web"))
        session = nil
        let delivery = consume.deliver(to: tag, routingKey: "alice.carol", body: "x", messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e")
        #expect(consume.calls.contains("nack \(delivery) requeue"))
        #expect(await eventually { consume.consumer(of: "warren.inbox.carol.web") == nil })
    }
}
