import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing
@testable import WarrenCore

@Suite("Poll sessions on a fake broker")
struct PollServiceTests {

    func makeService(_ bridge: FakeBridge, lease: Int = 60) async -> PollService {
        var settings = PollSettings()
        settings.lease = lease
        return PollService(runtime: bridge.runtime, settings: settings, codec: await PollSessionCodec.make(secret: ""), nodeID: "n1",
                           logger: Logger(label: "test"))
    }

    /// carol's session on node n1 with one inbox subscription, and the fake broker channel its
    /// inbox is consumed on.
    struct InboxPoller {
        let service: PollService
        let token: String
        let consume: FakeChannel

        static func open(_ tests: PollServiceTests) async throws -> InboxPoller {
            let bridge = try await FakeBridge()
            let service = await tests.makeService(bridge)
            let (token, _, _) = try await service.create(user: "carol", device: "web", policy: .standard,
                                                      subscriptions: [PollSubscription(id: "in", pattern: "#.carol.#", mode: "inbox")])
            return InboxPoller(service: service, token: token, consume: bridge.channels.consuming(prefetch: InboxSettings().prefetch))
        }

        /// Delivers message `n` (0–9) to the inbox consumer; its delivery tag.
        func deliver(_ n: Int) -> UInt64 {
            consume.deliver(to: consume.consumerTags[0], routingKey: "alice.carol", body: "m\(n)",
                            messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9\(n)")
        }

        func poll(ack: String?) async throws -> PollAnswer {
            try await service.poll(session: token, user: "carol", policy: .standard, wait: 0, max: 10, ack: ack)
        }
    }

    func expectCode(_ code: ErrorCode, _ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("expected \(code)")
        } catch let error as ProtocolError {
            #expect(error.code == code)
        } catch {
            Issue.record("expected \(code), got \(error)")
        }
    }

    /// A session string travels in every poll's URL: one too long for a request head is refused
    /// at its creation, before anything is bound, instead of issued and then never served.
    @Test func aSessionTooLongForAPollsURLIsRefusedAtItsCreation() async throws {
        let bridge = try await FakeBridge()
        let service = await makeService(bridge)
        let long = (0..<100).map { i in
            PollSubscription(id: "room-\(i)", pattern: "room.\(String(repeating: "a", count: 60)).\(String(repeating: "b", count: 60)).\(i)", mode: "live")
        }
        await expectCode(.tooLarge) { _ = try await service.create(user: "carol", device: "web", policy: .standard, subscriptions: long) }
        #expect(bridge.binds.calls.isEmpty && service.sessionCount == 0, "\(bridge.binds.calls)")
        // As many subscriptions with ordinary names make a string that fits, and is served.
        let short = (0..<100).map { i in PollSubscription(id: "s\(i)", pattern: "room.lobby-\(i)", mode: "live") }
        let (token, _, _) = try await service.create(user: "carol", device: "web", policy: .standard, subscriptions: short)
        #expect(token.utf8.count <= PollSessionCodec.maxTokenBytes)
        let items = try await service.poll(session: token, user: "carol", policy: .standard, wait: 0, max: 10, ack: nil).messages
        #expect(items.isEmpty)
    }

    /// An answer that could not carry everything the session held says so (`"more":true`), so a
    /// client that must have it all (one draining a session it leaves) asks again at once.
    @Test func anAnswerSaysWhenTheSessionHeldMore() async throws {
        let bridge = try await FakeBridge()
        let service = await makeService(bridge)
        let (token, _, _) = try await service.create(user: "carol", device: "web", policy: .standard, subscriptions: [
            PollSubscription(id: "r", pattern: "room.lobby", mode: "live"),
        ])
        for k in 0..<3 { bridge.live.deliver(to: bridge.liveConsumer, routingKey: "room.lobby", body: "m\(k)") }
        let first = try await service.poll(session: token, user: "carol", policy: .standard, wait: 0, max: 2, ack: nil)
        #expect(first.messages.count == 2 && first.more)
        let rest = try await service.poll(session: token, user: "carol", policy: .standard, wait: 0, max: 2, ack: first.cursor)
        #expect(rest.messages.count == 1 && !rest.more)
    }

    /// A session is served under the access policy of the poll that opened it on this node. A
    /// poll under another (a token whose `warren` claim was narrowed) does not find it still
    /// subscribed as before: it is opened afresh under the new rules, refused `forbidden` when
    /// one of its subscriptions is no longer allowed, and nothing of the old one is served.
    @Test func aSessionPolledUnderNarrowerRulesIsNotServedTheOldOnes() async throws {
        let bridge = try await FakeBridge()
        let service = await makeService(bridge)
        let roomless = AccessPolicy(subscribe: ["#.{user}.#"], publish: ["#.{user}.#"])
        let (wide, _, _) = try await service.create(user: "carol", device: "web", policy: .standard, subscriptions: [
            PollSubscription(id: "r", pattern: "room.lobby", mode: "live"),
        ])
        bridge.live.deliver(to: bridge.liveConsumer, routingKey: "room.lobby", body: "buffered")
        await expectCode(.forbidden) { _ = try await service.poll(session: wide, user: "carol", policy: roomless, wait: 0, max: 10, ack: nil) }
        #expect(service.sessionCount == 0)
        // The same session under its own policy again: opened afresh, the old buffer gone.
        bridge.live.deliver(to: bridge.liveConsumer, routingKey: "room.lobby", body: "unseen")
        let again = try await service.poll(session: wide, user: "carol", policy: .standard, wait: 0, max: 10, ack: nil)
        #expect(again.messages.isEmpty && service.sessionCount == 1)
        // The event-loop path takes only a poll under the policy the session is open with.
        func onLoop(_ policy: AccessPolicy) -> PollService.Polled {
            var last: PollService.LastPolled?
            return service.poll(session: wide[...], user: "carol", policy: policy, wait: 0, max: 10, ack: nil, to: DiscardingSink(),
                                      last: &last)
        }
        guard case .elsewhere = onLoop(roomless) else { Issue.record("served under other rules"); return }
        guard case .answered = onLoop(.standard) else { Issue.record("not served under its own rules"); return }

        // A session whose subscriptions the narrower rules still allow is served under them.
        let (mine, _, _) = try await service.create(user: "carol", device: "web", policy: .standard, subscriptions: [
            PollSubscription(id: "me", pattern: "#.carol.#", mode: "live"),
        ])
        _ = try await service.poll(session: mine, user: "carol", policy: roomless, wait: 0, max: 10, ack: nil)
        bridge.live.deliver(to: bridge.liveConsumer, routingKey: "carol.dave", body: "still mine")
        let served = try await service.poll(session: mine, user: "carol", policy: roomless, wait: 0, max: 10, ack: nil)
        #expect(served.messages.count == 1 && service.sessionCount == 2)
    }

    @Test func aPollSessionIsAClientSessionBehindABuffer() async throws {
        let bridge = try await FakeBridge()
        let service = await makeService(bridge)
        let (token, _, _) = try await service.create(user: "carol", device: "web", policy: .standard, subscriptions: [
            PollSubscription(id: "r", pattern: "room.lobby", mode: "live"),
            PollSubscription(id: "in", pattern: "#.carol.#", mode: "inbox"),
        ])
        // The node's live queue gets the binding; the inbox is declared, bound and consumed on the
        // shared channel before the 201.
        #expect(bridge.binds.calls == ["bind warren.live.test room.lobby"])
        #expect(bridge.channels.admin.calls == ["declare warren.inbox.carol.web", "bind warren.inbox.carol.web #.carol.#"])
        let consume = bridge.channels.consuming(prefetch: InboxSettings().prefetch)
        #expect(consume.calls == ["consume warren.inbox.carol.web"])

        bridge.live.deliver(to: bridge.liveConsumer, routingKey: "room.lobby", body: "hello room")
        let id = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e"
        let tag = consume.deliver(to: consume.consumerTags[0], routingKey: "alice.carol", body: "hi carol", messageID: id)
        let answer = try await service.poll(session: token, user: "carol", policy: .standard, wait: 0, max: 10, ack: nil)
        let (items, cursor) = (answer.messages, answer.cursor)
        #expect(items.map(\.inboxID) == [nil, id])
        #expect(cursor.hasPrefix("n1."))
        #expect(!consume.calls.contains("ack \(tag)"), "leased, not acked")
        let none = try await service.poll(session: token, user: "carol", policy: .standard, wait: 0, max: 10, ack: cursor).messages
        #expect(none.isEmpty)
        #expect(consume.calls.contains("ack \(tag)"), "acked with the cursor")

        await expectCode(.notFound) { _ = try await service.poll(session: token, user: "mallory", policy: .standard, wait: 0, max: 1, ack: nil) }
        try await service.delete(session: token, user: "carol")
        #expect(bridge.binds.calls.last == "unbind warren.live.test room.lobby")
        #expect(consume.calls.last == "cancel consume100-c1")
        await expectCode(.notFound) { _ = try await service.poll(session: token, user: "carol", policy: .standard, wait: 0, max: 1, ack: nil) }
    }

    /// A connection keeps the session it polled last and takes its next poll of the same session
    /// string without the node's table; a session ended here since (a `DELETE`, `poll.session_ttl`)
    /// is not served from what the connection kept, and one opened again is the new one.
    @Test func theSessionAConnectionKeptIsNotServedOnceItEnded() async throws {
        let bridge = try await FakeBridge()
        let service = await makeService(bridge)
        let subscriptions = [PollSubscription(id: "r", pattern: "room.lobby", mode: "live")]
        let (token, _, _) = try await service.create(user: "carol", device: "web", policy: .standard, subscriptions: subscriptions)
        var last: PollService.LastPolled?
        func onLoop() -> PollService.Polled {
            service.poll(session: token[...], user: "carol", policy: .standard, wait: 0, max: 10, ack: nil, to: DiscardingSink(),
                               last: &last)
        }
        guard case .answered = onLoop() else { Issue.record("not served"); return }
        #expect(last != nil)
        guard case .answered = onLoop() else { Issue.record("not served from what the connection kept"); return }
        // Another user's poll of the same string is not served from it either.
        var mallory = last
        guard case .elsewhere = service.poll(session: token[...], user: "mallory", policy: .standard, wait: 0, max: 10, ack: nil,
                                                   to: DiscardingSink(), last: &mallory) else { Issue.record("served to another user"); return }
        try await service.delete(session: token, user: "carol")
        guard case .elsewhere = onLoop() else { Issue.record("a deleted session served"); return }
        #expect(last == nil)

        // Dropped by the sweep after poll.session_ttl without a poll, then opened again by a poll.
        let (other, _, _) = try await service.create(user: "carol", device: "web", policy: .standard, subscriptions: subscriptions)
        var kept: PollService.LastPolled?
        func poll(_ token: String) -> PollService.Polled {
            service.poll(session: token[...], user: "carol", policy: .standard, wait: 0, max: 10, ack: nil, to: DiscardingSink(),
                               last: &kept)
        }
        guard case .answered = poll(other) else { Issue.record("not served"); return }
        service.sweep(now: WallClock.milliseconds() + Int64(PollSettings().sessionTTL) * 1000 + 1_000)
        #expect(service.sessionCount == 0)
        guard case .elsewhere = poll(other) else { Issue.record("a dropped session served"); return }
        try await service.prepare(session: other, user: "carol", policy: .standard)
        guard case .answered = poll(other) else { Issue.record("the session opened again not served"); return }
        // The one served now is the session open in the table: a delivery reaches it.
        bridge.live.deliver(to: bridge.liveConsumer, routingKey: "room.lobby", body: "after")
        let answer = try await service.poll(session: other, user: "carol", policy: .standard, wait: 0, max: 10, ack: nil)
        #expect(answer.messages.count == 1)
    }

    @Test func aLongPollWakesOnADelivery() async throws {
        let bridge = try await FakeBridge()
        let service = await makeService(bridge)
        let (token, _, _) = try await service.create(user: "carol", device: "web", policy: .standard,
                                                  subscriptions: [PollSubscription(id: "r", pattern: "room.lobby", mode: "live")])
        let held = Task { try await service.poll(session: token, user: "carol", policy: .standard, wait: 30, max: 10, ack: nil).messages }
        for _ in 0..<1000 where service.parkedPolls == 0 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(service.parkedPolls == 1)
        bridge.live.deliver(to: bridge.liveConsumer, routingKey: "room.lobby", body: "wake up")
        let answered = try await held.value
        #expect(answered.count == 1)
        #expect(service.parkedPolls == 0)
    }

    @Test func anUnackedLeaseRunsOutAndIsHandedBack() async throws {
        let bridge = try await FakeBridge()
        let service = await makeService(bridge, lease: 1)
        let (token, _, _) = try await service.create(user: "carol", device: "web", policy: .standard,
                                                  subscriptions: [PollSubscription(id: "in", pattern: "#.carol.#", mode: "inbox")])
        let consume = bridge.channels.consuming(prefetch: InboxSettings().prefetch)
        let tag = consume.deliver(to: consume.consumerTags[0], routingKey: "alice.carol", body: "x",
                                  messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e")
        let items = try await service.poll(session: token, user: "carol", policy: .standard, wait: 0, max: 10, ack: nil).messages
        #expect(items.count == 1)
        service.sweep(now: WallClock.milliseconds() + 1_001)
        #expect(consume.calls.contains("nack \(tag) requeue"))
    }

    /// A client polls with the cursor of the last answer it read. An answer made after it never
    /// reached the client (a connection cut as it was answered, an HTTP stack that sent the poll
    /// again): its inbox delivery is handed back to RabbitMQ, not acked by the next cursor unseen.
    /// An ack on its own (`POST …/ack`) hands nothing back.
    @Test func anAnswerThePollerNeverGotIsHandedBackNotAckedUnseen() async throws {
        let carol = try await InboxPoller.open(self)
        let (service, consume) = (carol.service, carol.consume)
        func deliver(_ n: Int) -> UInt64 { carol.deliver(n) }
        func poll(ack: String?) async throws -> PollAnswer { try await carol.poll(ack: ack) }
        let t0 = deliver(0)
        let unread = try await poll(ack: service.firstCursor)
        #expect(unread.messages.count == 1)
        // Nothing read yet: the first poll again acks the session's first cursor.
        _ = try await poll(ack: service.firstCursor)
        #expect(consume.calls.contains("nack \(t0) requeue"), "the first answer too: \(consume.calls)")
        let t1 = deliver(1)
        let read = try await poll(ack: service.firstCursor)
        let t2 = deliver(2)
        let lost = try await poll(ack: read.cursor)
        #expect(lost.messages.count == 1)
        #expect(consume.calls.contains("ack \(t1)"))
        // The client never read `lost`, and polls again with the cursor before it.
        _ = try await poll(ack: read.cursor)
        #expect(consume.calls.contains("nack \(t2) requeue"), "handed back: \(consume.calls)")
        #expect(!consume.calls.contains("ack \(t2)"))

        let t3 = deliver(3)
        let third = try await poll(ack: nil)
        try await service.ack(session: carol.token, user: "carol", cursor: read.cursor)
        #expect(!consume.calls.contains("nack \(t3) requeue"), "an ack alone says nothing of later answers")
        _ = try await poll(ack: third.cursor)
        #expect(consume.calls.contains("ack \(t3)"))
    }

    /// A long-poll parked here is answered after its client went to another node (the answer
    /// lost on the way); the client polls here again with that node's cursor and acks the
    /// answer it gets: the lost answer's delivery goes back to RabbitMQ instead of being acked
    /// by the later cursor unseen (before 2026-11-29 it was, and the message was lost: seen with
    /// the Swift client on two nodes behind a proxy that cut connections).
    @Test func anAnswerLostBeforeThePollerCameFromAnotherNodeIsHandedBack() async throws {
        let carol = try await InboxPoller.open(self)
        let (service, consume) = (carol.service, carol.consume)
        func deliver(_ n: Int) -> UInt64 { carol.deliver(n) }
        func poll(ack: String?) async throws -> PollAnswer { try await carol.poll(ack: ack) }
        let lost = deliver(0)
        #expect(try await poll(ack: service.firstCursor).messages.count == 1)  // never reaches the client
        let back = try await poll(ack: "n2.7")  // back, with the cursor of the last answer it read on n2
        #expect(back.messages.isEmpty)
        let next = deliver(1)
        let read = try await poll(ack: back.cursor)
        #expect(read.messages.count == 1)
        _ = try await poll(ack: read.cursor)
        #expect(consume.calls.contains("ack \(next)"))
        #expect(consume.calls.contains("nack \(lost) requeue"), "handed back: \(consume.calls)")
        #expect(!consume.calls.contains("ack \(lost)"))
    }

    /// The client read an answer here, then read from another node, which consumed the same
    /// inbox meanwhile; a delivery that waited here is handed back when it polls here again
    /// with that node's cursor, to come again marked redelivered, instead of being answered
    /// first-time after later messages it read there (a soak's poller moving nodes, 2026-12-03).
    @Test func anInboxDeliveryThatWaitedWhileThePollerWasElsewhereIsHandedBack() async throws {
        let carol = try await InboxPoller.open(self)
        let (service, consume) = (carol.service, carol.consume)
        _ = carol.deliver(0)
        let read = try await carol.poll(ack: service.firstCursor)
        #expect(read.messages.count == 1)
        let waited = carol.deliver(1)                     // while the client polls n2
        let back = try await carol.poll(ack: "n2.7")
        #expect(back.messages.isEmpty, "not answered first-time out of order")
        #expect(consume.calls.contains("nack \(waited) requeue"), "handed back: \(consume.calls)")
        let fresh = carol.deliver(2)
        let next = try await carol.poll(ack: back.cursor)
        #expect(next.messages.count == 1)
        _ = try await carol.poll(ack: next.cursor)
        #expect(consume.calls.contains("ack \(fresh)"))
    }

    @Test func subscriptionsAreCheckedBeforeAnyBrokerWork() async throws {
        let bridge = try await FakeBridge()
        let service = await makeService(bridge)
        await expectCode(.forbidden) {
            _ = try await service.create(user: "carol", device: "web", policy: .standard,
                                         subscriptions: [PollSubscription(id: "a", pattern: "#", mode: "live")])
        }
        await expectCode(.badFrame) {
            _ = try await service.create(user: "carol", device: "web", policy: .standard,
                                         subscriptions: [PollSubscription(id: "a", pattern: "room.x", mode: "sometimes")])
        }
        await expectCode(.conflict) {
            _ = try await service.create(user: "carol", device: "web", policy: .standard, subscriptions: [
                PollSubscription(id: "a", pattern: "room.x", mode: "live"), PollSubscription(id: "a", pattern: "room.y", mode: "live"),
            ])
        }
        #expect(bridge.binds.calls.isEmpty && bridge.channels.admin.calls.isEmpty)
    }

    @Test func aSessionHoldsOneOfItsUsersConnectionSlotsUntilItEnds() async throws {
        var limits = BridgeLimits()
        limits.maxConnectionsPerUser = 2
        let bridge = try await FakeBridge(limits: limits)
        let service = await makeService(bridge)
        let live = [PollSubscription(id: "r", pattern: "room.lobby", mode: "live")]
        let first = try await service.create(user: "carol", device: "web", policy: .standard, subscriptions: live).session
        let second = try await service.create(user: "carol", device: "web", policy: .standard, subscriptions: live).session
        // Polled or not, two sessions hold both slots: a third is refused before any broker work,
        // and so is a WebSocket.
        let binds = bridge.binds.calls.count
        await expectCode(.rateLimited) { _ = try await service.create(user: "carol", device: "web", policy: .standard, subscriptions: live) }
        #expect(bridge.binds.calls.count == binds)
        #expect(!bridge.runtime.users.openConnection("carol"))
        #expect(service.sessionCount == 2)
        // Other users are not affected.
        _ = try await service.create(user: "dave", device: "web", policy: .standard, subscriptions: live)
        // Polls do not take a slot of their own.
        _ = try await service.poll(session: first, user: "carol", policy: .standard, wait: 0, max: 10, ack: nil)
        // Deleting a session frees its slot at once...
        try await service.delete(session: first, user: "carol")
        let third = try await service.create(user: "carol", device: "web", policy: .standard, subscriptions: live).session
        await expectCode(.rateLimited) { _ = try await service.create(user: "carol", device: "web", policy: .standard, subscriptions: live) }
        // ...and so does dropping one after `poll.session_ttl` without a poll.
        service.sweep(now: WallClock.milliseconds() + Int64(PollSettings().sessionTTL) * 1000 + 1)
        #expect(service.sessionCount == 0)
        #expect(bridge.runtime.users.openConnection("carol") && bridge.runtime.users.openConnection("carol"))
        _ = (second, third)
    }

    /// A DELETE on a node that is opening the session for its first poll there (the broker's
    /// answer to the binding still to come) drops it once it is open: the poll is `not_found`.
    @Test func aDeleteDuringTheFirstPollOnANodeDropsTheSessionThere() async throws {
        let first = await makeService(try await FakeBridge())
        let live = [PollSubscription(id: "r", pattern: "room.lobby", mode: "live")]
        let token = try await first.create(user: "carol", device: "web", policy: .standard, subscriptions: live).session
        let bridge = try await FakeBridge()
        let other = PollService(runtime: bridge.runtime, settings: PollSettings(), codec: await PollSessionCodec.make(secret: ""),
                                nodeID: "n2", logger: Logger(label: "test"))
        let gate = bridge.binds.hold("bind warren.live.test room.lobby")
        let polling = Task { try await other.poll(session: token, user: "carol", policy: .standard, wait: 0, max: 10, ack: nil) }
        await gate.reached()
        try await other.delete(session: token, user: "carol")
        gate.open()
        await expectCode(.notFound) { _ = try await polling.value }
        #expect(other.sessionCount == 0)
        #expect(bridge.runtime.hub.patternCount == 0)
        await expectCode(.notFound) { _ = try await other.poll(session: token, user: "carol", policy: .standard, wait: 0, max: 1, ack: nil) }
    }

    /// Tombstones of deleted sessions are bounded: past the limit the older half goes, the
    /// newest stay `not_found`.
    @Test func deletedSessionsAreRememberedWithinABound() async throws {
        let bridge = try await FakeBridge()
        let service = PollService(runtime: bridge.runtime, settings: PollSettings(), codec: await PollSessionCodec.make(secret: ""),
                                  nodeID: "n1", logger: Logger(label: "test"), tombstoneLimit: 4)
        let live = [PollSubscription(id: "r", pattern: "room.lobby", mode: "live")]
        var tokens: [String] = []
        for _ in 0..<5 {
            let token = try await service.create(user: "carol", device: "web", policy: .standard, subscriptions: live).session
            try await service.delete(session: token, user: "carol")
            tokens.append(token)
        }
        #expect(service.tombstoneCount == 2)
        await expectCode(.notFound) { _ = try await service.poll(session: tokens[4], user: "carol", policy: .standard, wait: 0, max: 1, ack: nil) }
        await expectCode(.notFound) { _ = try await service.poll(session: tokens[3], user: "carol", policy: .standard, wait: 0, max: 1, ack: nil) }
        // The oldest is forgotten: its token (still validly signed) opens it again.
        _ = try await service.poll(session: tokens[0], user: "carol", policy: .standard, wait: 0, max: 1, ack: nil)
    }
}
