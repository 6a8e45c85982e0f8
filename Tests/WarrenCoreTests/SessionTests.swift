import AMQPClient
import Logging
import NIOCore
import Testing
@testable import WarrenCore

private func session(_ bridge: FakeBridge, _ user: String, _ output: RecordingOutput, device: String = "d") -> ClientSession {
    ClientSession(runtime: bridge.runtime, user: user, device: device, rules: AccessPolicy.standard.resolved(for: user),
                  output: output, logger: Logger(label: "test"))
}

private func frame(_ text: String) -> ByteBuffer { ByteBuffer(string: text) }

@Suite("Client sessions on a fake broker")
struct SessionTests {
    @Test func inboxConsumersShareOneChannelAndAckByEnvelopeID() async throws {
        let bridge = try await FakeBridge()
        let outA = RecordingOutput(), outB = RecordingOutput()
        let alice = session(bridge, "alice", outA), bob = session(bridge, "bob", outB)
        await alice.handle(frame(##"{"op":"sub","id":"s1","pattern":"#.alice.#","mode":"inbox"}"##))
        await bob.handle(frame(##"{"op":"sub","id":"s1","pattern":"#.bob.#","mode":"inbox"}"##))
        #expect(outA.json.last?["op"]?.stringValue == "subscribed")
        #expect(bridge.channels.admin.calls == ["declare warren.inbox.alice.d", "bind warren.inbox.alice.d #.alice.#",
                                                "declare warren.inbox.bob.d", "bind warren.inbox.bob.d #.bob.#"])
        // Both consumers on the one consumption channel for the inbox prefetch: no channel per client.
        let channel = bridge.channels.consuming(prefetch: InboxSettings().prefetch)
        #expect(channel.calls == ["consume warren.inbox.alice.d", "consume warren.inbox.bob.d"])
        let (aliceTag, bobTag) = ("consume100-c1", "consume100-c2")

        let id = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e"
        let t1 = channel.deliver(to: aliceTag, routingKey: "alice.bob", body: "hi", messageID: id)
        let msg = try #require(outA.json.last)
        #expect(msg["op"]?.stringValue == "msg" && msg["sub"]?.stringValue == "s1")
        #expect(msg["env"]?["id"]?.stringValue == id && msg["env"]?["body"]?.stringValue == "hi")
        #expect(outA.inboxIDs.last == id)

        await alice.handle(frame(#"{"op":"ack","id":"\#(id)"}"#))
        #expect(channel.calls.last == "ack \(t1)")
        await alice.handle(frame(#"{"op":"ack","id":"\#(id)"}"#))
        #expect(outA.json.last?["code"]?.stringValue == "not_found" && outA.json.last?["ref"]?.stringValue == id)
        // A batch of 150 stale ids: each is answered, and the frame is one bad frame, not 150
        // (over `limits.max_bad_frames`, 100, the socket would close with 1008).
        let stale = (0..<150).map { n -> String in
            let hex = String(n, radix: 16)
            return "0196a3f2-7c1e-7b3a-9d2e-" + String(repeating: "0", count: 12 - hex.count) + hex
        }
        let errorsBefore = outA.json.filter { $0["op"]?.stringValue == "error" }.count
        await alice.handle(frame(#"{"op":"ack","ids":["\#(stale.joined(separator: #"",""#))"]}"#))
        let answered = outA.json.filter { $0["op"]?.stringValue == "error" }.dropFirst(errorsBefore)
        #expect(answered.map { $0["ref"]?.stringValue } == stale && answered.allSatisfy { $0["code"]?.stringValue == "not_found" })
        #expect(outA.closed == nil, "closed with \(outA.closed.map(String.init) ?? "")")

        // Going away: the consumer is cancelled and what was not acked goes back, one by one;
        // the other session's consumer on the same channel is untouched.
        let t2 = channel.deliver(to: aliceTag, routingKey: "alice.bob", body: "unacked", messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9f")
        await alice.end()
        #expect(Array(channel.calls.suffix(2)) == ["cancel \(aliceTag)", "nack \(t2) requeue"])
        #expect(channel.consumerTags == [bobTag])
        await bob.end()
    }

    @Test func liveSubscribersShareOneBindingAndOneFrame() async throws {
        let bridge = try await FakeBridge()
        let outA = RecordingOutput(), outB = RecordingOutput()
        let a = session(bridge, "alice", outA), b = session(bridge, "bob", outB)
        await a.handle(frame(#"{"op":"sub","id":"r","pattern":"room.x"}"#))
        await b.handle(frame(#"{"op":"sub","id":"r","pattern":"room.x"}"#))
        #expect(bridge.binds.calls == ["bind warren.live.test room.x"])
        bridge.live.deliver(to: bridge.liveConsumer, routingKey: "room.x", body: "hello")
        bridge.live.deliver(to: bridge.liveConsumer, routingKey: "room.y", body: "elsewhere")
        #expect(outA.json.filter { $0["op"]?.stringValue == "msg" }.count == 1)
        #expect(outA.frames.last == outB.frames.last && outA.json.last?["env"]?["body"]?.stringValue == "hello")
        await a.handle(frame(#"{"op":"unsub","id":"r"}"#))
        #expect(bridge.binds.calls.count == 1, "bob still needs the binding")
        await b.end()
        #expect(bridge.binds.calls.last == "unbind warren.live.test room.x")
        await a.end()
    }

    /// Past `live_bind_all_after` distinct patterns the live queue is bound with `#` once and
    /// later subscriptions need no broker call; what they match is still delivered to them
    /// alone. Below half the limit the patterns are bound on their own again and `#` goes.
    @Test func pastTheLimitTheLiveQueueIsBoundWithHashOnce() async throws {
        let bridge = try await FakeBridge(liveBindAllAfter: 4)
        var sessions: [(ClientSession, RecordingOutput)] = []
        for i in 0..<8 {
            let out = RecordingOutput()
            let s = session(bridge, "u\(i)", out)
            await s.handle(frame(#"{"op":"sub","id":"r","pattern":"room.\#(i)"}"#))
            #expect(out.json.last?["op"]?.stringValue == "subscribed")
            sessions.append((s, out))
        }
        #expect(bridge.binds.calls == (0..<4).map { "bind warren.live.test room.\($0)" } + ["bind warren.live.test #"])
        #expect(bridge.runtime.hub.currentBindings.all)
        // Now a live subscription is taken at once, on the caller's thread: no task, no broker call.
        let late = RecordingOutput()
        let lateSession = session(bridge, "late", late)
        #expect(lateSession.receive(frame(#"{"op":"sub","id":"r","pattern":"room.late"}"#)) == nil)
        #expect(late.json.last?["op"]?.stringValue == "subscribed" && bridge.binds.calls.count == 5)
        // Refusals still take the async path and are answered there (here: the id in use).
        let again = try #require(lateSession.receive(frame(#"{"op":"sub","id":"r","pattern":"room.other"}"#)))
        await lateSession.complete(again)
        #expect(late.json.last?["code"]?.stringValue == "conflict")
        await lateSession.end()
        // Matched here: each message reaches its own room's subscriber only; one no local
        // pattern matches (the queue gets everything now) reaches nobody.
        bridge.live.deliver(to: bridge.liveConsumer, routingKey: "room.6", body: "six")
        bridge.live.deliver(to: bridge.liveConsumer, routingKey: "room.99", body: "nobody's")
        bridge.live.deliver(to: bridge.liveConsumer, routingKey: "room.1", body: "one")
        for (i, (_, out)) in sessions.enumerated() {
            let bodies = out.json.filter { $0["op"]?.stringValue == "msg" }.compactMap { $0["env"]?["body"]?.stringValue }
            #expect(bodies == (i == 6 ? ["six"] : i == 1 ? ["one"] : []), "socket \(i)")
        }
        // Leaving: own bindings go with their last subscriber; at 2 patterns left (half of 4)
        // the rest are bound on their own and `#` goes, in that order.
        for i in [0, 5, 6, 7, 1, 2] { await sessions[i].0.end() }
        let after = Array(bridge.binds.calls.dropFirst(5))
        #expect(after == ["unbind warren.live.test room.0", "unbind warren.live.test room.1", "unbind warren.live.test room.2",
                          "bind warren.live.test room.4", "unbind warren.live.test #"])
        #expect(!bridge.runtime.hub.currentBindings.all && bridge.runtime.hub.currentBindings.own == ["room.3", "room.4"])
        bridge.live.deliver(to: bridge.liveConsumer, routingKey: "room.4", body: "four")
        #expect(sessions[4].1.json.last?["env"]?["body"]?.stringValue == "four")
        for i in [3, 4] { await sessions[i].0.end() }
        #expect(bridge.runtime.hub.currentBindings == LiveBindings(bindAllAfter: 4))
    }

    /// An inbox delivery names the inbox subscription whose pattern matches its route (the
    /// first by id when several do; the first when none does).
    @Test func anInboxDeliveryNamesTheSubscriptionItMatches() async throws {
        let bridge = try await FakeBridge()
        let out = RecordingOutput()
        let s = session(bridge, "alice", out)
        await s.handle(frame(##"{"op":"sub","id":"rooms","pattern":"room.#","mode":"inbox"}"##))
        await s.handle(frame(##"{"op":"sub","id":"mine","pattern":"#.alice.#","mode":"inbox"}"##))
        let channel = bridge.channels.consuming(prefetch: InboxSettings().prefetch)
        let tag = "consume100-c1"
        channel.deliver(to: tag, routingKey: "alice.bob", body: "1", messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d91")
        #expect(out.json.last?["sub"]?.stringValue == "mine")
        channel.deliver(to: tag, routingKey: "room.alice", body: "2", messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d92")
        #expect(out.json.last?["sub"]?.stringValue == "mine")  // both match: "mine" < "rooms"
        channel.deliver(to: tag, routingKey: "room.x", body: "3", messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d93")
        #expect(out.json.last?["sub"]?.stringValue == "rooms")
        await s.end()
    }

    /// An inbox queue keeps its bindings while its device is away, so it can still be bound with
    /// a pattern the user may no longer read (here `room.#`, from before `acl.subscribe` lost
    /// it). Such deliveries are acked and counted, never shown; a route the user may still read
    /// is shown even with no subscription of this session matching it.
    @Test func anInboxDeliveryTheUserMayNoLongerReadIsDroppedNotShown() async throws {
        let metrics = WarrenMetrics(classifier: RouteClassifier([]))
        let bridge = try await FakeBridge(metrics: metrics)
        let out = RecordingOutput()
        let narrowed = AccessPolicy(subscribe: ["#.{user}.#"], publish: ["#.{user}.#", "room.#"]).resolved(for: "alice")
        let s = ClientSession(runtime: bridge.runtime, user: "alice", device: "d", rules: narrowed, output: out,
                              logger: Logger(label: "test"))
        await s.handle(frame(##"{"op":"sub","id":"rooms","pattern":"room.#","mode":"inbox"}"##))
        #expect(out.json.last?["code"]?.stringValue == "forbidden")
        await s.handle(frame(##"{"op":"sub","id":"mine","pattern":"alice.*","mode":"inbox"}"##))
        #expect(out.json.last?["op"]?.stringValue == "subscribed")
        let channel = bridge.channels.consuming(prefetch: InboxSettings().prefetch)
        let tag = "consume100-c1"
        let shown = out.json.count
        let secret = channel.deliver(to: tag, routingKey: "room.secret", body: "secret", messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d91")
        let invalid = channel.deliver(to: tag, routingKey: "x..alice", body: "odd", messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d92")
        channel.deliver(to: tag, routingKey: "group.g1.alice", body: "readable", messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d93")
        channel.deliver(to: tag, routingKey: "alice.bob", body: "sentinel", messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d94")
        let bodies = out.json.dropFirst(shown).map { "\($0["sub"]?.stringValue ?? "-") \($0["env"]?["body"]?.stringValue ?? "-")" }
        #expect(bodies == ["mine readable", "mine sentinel"])
        #expect(channel.calls.contains("ack \(secret)") && channel.calls.contains("ack \(invalid)"))
        #expect(metrics.droppedCount(.forbidden) == 1 && metrics.droppedCount(.invalid) == 1)
        #expect(out.inboxIDs.count == 2)
        await s.end()
    }

    /// An inbox queue RabbitMQ has with other arguments (declared under an earlier `[inbox]`:
    /// `max_length`, `expires_ms`, `overflow`, a `queue_type` `auto` now chooses otherwise) is
    /// refused with a 406 at each declaration; it is used as it is (a passive declare checks it
    /// is there), where every such user's inbox was `unavailable` until the queue expired. A
    /// declaration whose shared channel another request's error closed under it is made again
    /// on another.
    @Test func anInboxQueueWithOtherArgumentsIsUsedAndAnotherRequestsErrorIsRetried() async throws {
        let bridge = try await FakeBridge()
        func closed(for queue: String) -> AMQPError {
            .channelClosed(CloseArguments(replyCode: ReplyCode.preconditionFailed, replyText: "PRECONDITION_FAILED - inequivalent arg "
                                          + "'x-max-length' for queue '\(queue)' in vhost '/': received '20000' but current is '10000'"))
        }
        let out = RecordingOutput()
        let s = session(bridge, "alice", out)
        bridge.channels.admin.failNext(closed(for: "warren.inbox.alice.d"))
        await s.handle(frame(##"{"op":"sub","id":"s1","pattern":"#.alice.#","mode":"inbox"}"##))
        #expect(out.json.last?["op"]?.stringValue == "subscribed", "\(out.json)")
        #expect(bridge.channels.admin.calls == ["declare warren.inbox.alice.d", "declare warren.inbox.alice.d",
                                                "bind warren.inbox.alice.d #.alice.#"])
        let outB = RecordingOutput()
        let b = session(bridge, "bob", outB)
        bridge.channels.admin.failNext(closed(for: "warren.inbox.carol.d"))
        await b.handle(frame(##"{"op":"sub","id":"s1","pattern":"#.bob.#","mode":"inbox"}"##))
        #expect(outB.json.last?["op"]?.stringValue == "subscribed", "\(outB.json)")
        // Refused for a reason of its own that is not the arguments (say a 403): the client is told.
        let outC = RecordingOutput()
        let c = session(bridge, "carol", outC)
        bridge.channels.admin.failNext(.channelClosed(CloseArguments(replyCode: 403, replyText: "ACCESS_REFUSED - access to queue "
                                                                     + "'warren.inbox.carol.d' in vhost '/' refused")))
        await c.handle(frame(##"{"op":"sub","id":"s1","pattern":"#.carol.#","mode":"inbox"}"##))
        #expect(outC.json.last?["code"]?.stringValue == "unavailable", "\(outC.json)")
        for x in [s, b, c] { await x.end() }
    }

    @Test func aForbiddenSubscriptionReachesNoBroker() async throws {
        let bridge = try await FakeBridge()
        let out = RecordingOutput()
        let s = session(bridge, "alice", out)
        await s.handle(frame(##"{"op":"sub","id":"all","pattern":"#","mode":"inbox"}"##))
        #expect(out.json.last?["code"]?.stringValue == "forbidden" && out.json.last?["ref"]?.stringValue == "all")
        #expect(bridge.channels.admin.calls.isEmpty && bridge.binds.calls.isEmpty)
        await s.end()
    }

    @Test func aBrokerFailureOnSubscribeIsUnavailableAndFreesTheID() async throws {
        let bridge = try await FakeBridge()
        let out = RecordingOutput()
        let s = session(bridge, "alice", out)
        bridge.channels.admin.failNext(.notConnected)
        await s.handle(frame(##"{"op":"sub","id":"s1","pattern":"#.alice.#","mode":"inbox"}"##))
        #expect(out.json.last?["code"]?.stringValue == "unavailable" && out.json.last?["ref"]?.stringValue == "s1")
        await s.handle(frame(##"{"op":"sub","id":"s1","pattern":"#.alice.#","mode":"inbox"}"##))
        #expect(out.json.last?["op"]?.stringValue == "subscribed")
        await s.end()
    }

    @Test func publishesAreStampedAndAdmittedOnePath() async throws {
        let bridge = try await FakeBridge()
        let out = RecordingOutput()
        let s = session(bridge, "alice", out)
        await s.handle(frame(#"{"op":"pub","route":"bob.carol","body":"x","cid":"c0"}"#))
        #expect(out.json.last?["code"]?.stringValue == "forbidden" && out.json.last?["ref"]?.stringValue == "c0")
        await s.handle(frame(#"{"op":"pub","route":"alice.bob","body":"x","cid":"c1"}"#))
        for _ in 0..<200 where out.json.last?["op"]?.stringValue != "puback" { try await Task.sleep(for: .milliseconds(5)) }
        #expect(out.json.last?["op"]?.stringValue == "puback" && out.json.last?["cid"]?.stringValue == "c1")
        #expect(bridge.publish.calls == ["publish alice.bob"])
        // Presence and read receipts name a user in their body: only Warren publishes them.
        for type in ["presence", "read"] {
            await s.handle(frame(#"{"op":"pub","route":"alice.bob","type":"\#(type)","body":{"user":"bob","state":"leave"},"cid":"\#(type)"}"#))
            #expect(out.json.last?["code"]?.stringValue == "forbidden" && out.json.last?["ref"]?.stringValue == type, "\(out.json.last!)")
        }
        #expect(bridge.publish.calls == ["publish alice.bob"])
        await s.end()
    }

    /// Each device word names a durable queue the broker keeps for days: a user's devices on a
    /// node are bounded, and the one past the bound is refused before any broker work.
    @Test func aUsersInboxDevicesAreBounded() async throws {
        var limits = BridgeLimits()
        limits.maxDevicesPerUser = 2
        let bridge = try await FakeBridge(limits: limits)
        let sub = frame(##"{"op":"sub","id":"s1","pattern":"#.alice.#","mode":"inbox"}"##)
        var sessions: [ClientSession] = []
        for device in ["web", "phone", "web"] {
            let out = RecordingOutput()
            let s = session(bridge, "alice", out, device: device)
            await s.handle(sub)
            #expect(out.json.last?["op"]?.stringValue == "subscribed")
            sessions.append(s)
        }
        let calls = bridge.channels.admin.calls
        let out = RecordingOutput()
        let third = session(bridge, "alice", out, device: "tablet")
        await third.handle(sub)
        #expect(out.json.last?["code"]?.stringValue == "rate_limited" && out.json.last?["ref"]?.stringValue == "s1")
        #expect(bridge.channels.admin.calls == calls)
        // A live subscription needs no inbox and is not refused; nor is another user.
        await third.handle(frame(##"{"op":"sub","id":"r","pattern":"room.lobby"}"##))
        #expect(out.json.last?["op"]?.stringValue == "subscribed")
        let bobOut = RecordingOutput()
        let bob = session(bridge, "bob", bobOut, device: "tablet")
        await bob.handle(frame(##"{"op":"sub","id":"s1","pattern":"#.bob.#","mode":"inbox"}"##))
        #expect(bobOut.json.last?["op"]?.stringValue == "subscribed")
        for s in sessions + [third, bob] { await s.end() }
    }
}

