import AMQPClient
import Foundation
import Testing
import WarrenCore

/// Presence across nodes (docs/protocol.md): real nodes, real clients through every door.
@Suite("Presence across nodes", .serialized)
struct PresenceIntegrationTests {
    static func presence(_ node: WarrenInstance, user: String, route: String) async throws -> HTTPTestClient.Response {
        try await HTTPTestClient.request(.GET, port: node.port, "/v1/presence?user=\(user)&route=\(route)")
    }

    /// Waits (bounded) until the node's presence query for `route` answers `users`.
    static func awaitUsers(_ node: WarrenInstance, route: String, _ users: [String], asking user: String) async throws -> Bool {
        for _ in 0..<200 {
            let r = try await presence(node, user: user, route: route)
            if r.json?["users"]?.arrayValue?.compactMap(\.stringValue) == users { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// The presence envelopes among `frames` (WebSocket `msg` frames), as "user state".
    static func changes(_ envs: [JSONValue]) -> [String] {
        envs.filter { $0["type"]?.stringValue == "presence" }
            .map { "\($0["body"]?["user"]?.stringValue ?? "?") \($0["body"]?["state"]?.stringValue ?? "?")" }
    }

    /// Envelopes a socket receives until one whose body is `sentinel`.
    static func envelopes(_ socket: TestSocket, until sentinel: String) async throws -> [JSONValue] {
        var envs: [JSONValue] = []
        while true {
            let f = try await socket.next(op: "msg")
            guard let env = f["env"] else { continue }
            envs.append(env)
            if env["body"]?.stringValue == sentinel { return envs }
        }
    }

    @Test func joinsAndLeavesReachEveryDoorOnceAndANodeThatDiesTakesItsUsersAlong() async throws {
        let env = ["WARREN_PRESENCE_TIMEOUT": "3"]
        let a = try await WarrenInstance.start(env)
        defer { a.process.terminate() }   // a failure midway must not leave nodes running
        let b = try await WarrenInstance.start(env, exchange: a.exchange)
        defer { b.process.terminate() }
        let room = "room.p\(UUID().uuidString.prefix(6).lowercased())"
        let alice = uniqueUser("alice"), bobName = uniqueUser("bob"), carol = uniqueUser("carol")

        // Watchers through every door: a socket on b, a poller on a, a plain AMQP queue.
        let bob = try await b.socket(bobName)
        try await bob.subscribe("w", room)
        let poller = try await Poller.open(port: a.port, user: carol, subscriptions: #"[{"id":"w","pattern":"\#(room)"}]"#)
        let observer = try await AMQPObserver.bound(to: a.exchange, pattern: room)

        // Alice joins on a.
        let a1 = try await a.socket(alice)
        let subscribed = try await a1.request(#"{"op":"sub","id":"p","pattern":"\#(room)","presence":true}"#, expect: "subscribed")
        #expect(subscribed["id"]?.stringValue == "p")
        let joined = try await bob.next(op: "msg")
        #expect(joined["env"]?["type"]?.stringValue == "presence")
        #expect(joined["env"]?["from"]?.stringValue == alice)
        #expect(joined["env"]?["transient"]?.boolValue == true)
        #expect(Self.changes([joined["env"] ?? .null]) == ["\(alice) join"])
        let polled = try await poller.poll(wait: 10)
        #expect(Self.changes(polled.messages.compactMap { $0["env"] }) == ["\(alice) join"])
        let viaAMQP = await observer.messages.next(timeout: .seconds(10))
        #expect(viaAMQP.flatMap { try? JSONParser.parse($0.body.readableBytesView) }.map { Self.changes([$0]) } == ["\(alice) join"])

        // Both nodes answer the same.
        #expect(try await Self.awaitUsers(a, route: room, [alice], asking: bobName))
        #expect(try await Self.awaitUsers(b, route: room, [alice], asking: bobName))

        // A second socket of hers on b: no second join.
        let a2 = try await b.socket(alice)
        _ = try await a2.request(#"{"op":"sub","id":"p","pattern":"\#(room)","presence":true}"#, expect: "subscribed")
        _ = try await bob.request(#"{"op":"pub","route":"\#(room)","body":"sentinel-1"}"#, expect: "puback")
        #expect(Self.changes(try await Self.envelopes(bob, until: "sentinel-1")).isEmpty, "her second socket is no second join")

        // Her socket on a closes: she is still on b. Then her last one closes: one leave.
        _ = await a1.close()
        #expect(try await Self.awaitUsers(a, route: room, [alice], asking: bobName))
        _ = await a2.close()
        #expect(try await Self.awaitUsers(a, route: room, [], asking: bobName))
        #expect(try await Self.awaitUsers(b, route: room, [], asking: bobName))
        // Sentinels through both nodes' publishers: whatever either published before is in by then.
        _ = try await poller.publish(#"{"route":"\#(room)","body":"sentinel-a"}"#)
        _ = try await bob.request(#"{"op":"pub","route":"\#(room)","body":"sentinel-b"}"#, expect: "puback")
        var seen = try await Self.envelopes(bob, until: "sentinel-a")
        if !seen.contains(where: { $0["body"]?.stringValue == "sentinel-b" }) { seen += try await Self.envelopes(bob, until: "sentinel-b") }
        #expect(Self.changes(seen) == ["\(alice) leave"], "one leave, after her last socket")

        // Her sockets on both nodes closing at once (each node may still believe the other has
        // her): one leave still.
        let a3 = try await a.socket(alice), a4 = try await b.socket(alice)
        _ = try await a3.request(#"{"op":"sub","id":"p","pattern":"\#(room)","presence":true}"#, expect: "subscribed")
        #expect(try await Self.awaitUsers(b, route: room, [alice], asking: bobName), "b has heard of her on a: no second join")
        _ = try await a4.request(#"{"op":"sub","id":"p","pattern":"\#(room)","presence":true}"#, expect: "subscribed")
        #expect(try await Self.awaitUsers(a, route: room, [alice], asking: bobName))
        async let closedA3 = a3.close()
        async let closedA4 = a4.close()
        _ = await (closedA3, closedA4)
        #expect(try await Self.awaitUsers(a, route: room, [], asking: bobName))
        #expect(try await Self.awaitUsers(b, route: room, [], asking: bobName))
        _ = try await poller.publish(#"{"route":"\#(room)","body":"sentinel-c"}"#)
        _ = try await bob.request(#"{"op":"pub","route":"\#(room)","body":"sentinel-d"}"#, expect: "puback")
        seen = try await Self.envelopes(bob, until: "sentinel-c")
        if !seen.contains(where: { $0["body"]?.stringValue == "sentinel-d" }) { seen += try await Self.envelopes(bob, until: "sentinel-d") }
        #expect(Self.changes(seen) == ["\(alice) join", "\(alice) leave"], "one join, and one leave however the closes met")

        // She moves from a to b, the close and the subscription at once: whichever node hears of
        // the other first, the last word is that she is here.
        let a5 = try await a.socket(alice)
        _ = try await a5.request(#"{"op":"sub","id":"p","pattern":"\#(room)","presence":true}"#, expect: "subscribed")
        #expect(Self.changes([try await bob.next(op: "msg")["env"] ?? .null]) == ["\(alice) join"])
        #expect(try await Self.awaitUsers(b, route: room, [alice], asking: bobName))
        let a6 = try await b.socket(alice)
        let announcements = try await AMQPObserver.bound(to: "\(a.exchange).presence", pattern: "")
        async let closedA5 = a5.close()
        async let subscribedA6 = a6.request(#"{"op":"sub","id":"p","pattern":"\#(room)","presence":true}"#, expect: "subscribed")
        _ = try await (closedA5, subscribedA6)
        // Both nodes have announced their change (a its leave, b its join), and a has heard b's:
        // whatever either owes is published by then.
        var announced: Set<Bool> = []
        while announced.count < 2, let m = await announcements.messages.next(timeout: .seconds(10)) {
            if case .change(_, let entry, let present, _)? = PresenceAnnouncement.decode(m.body.readableBytesView),
               entry == PresenceEntry(route: room, user: alice) { announced.insert(present) }
        }
        #expect(announced == [true, false])
        await announcements.close()
        #expect(try await Self.awaitUsers(a, route: room, [alice], asking: bobName))
        _ = try await poller.publish(#"{"route":"\#(room)","body":"sentinel-e"}"#)
        _ = try await bob.request(#"{"op":"pub","route":"\#(room)","body":"sentinel-f"}"#, expect: "puback")
        seen = try await Self.envelopes(bob, until: "sentinel-e")
        if !seen.contains(where: { $0["body"]?.stringValue == "sentinel-f" }) { seen += try await Self.envelopes(bob, until: "sentinel-f") }
        let moved = Self.changes(seen)
        // Either nothing (a heard of b first), or her leave then her join: b publishes a join
        // only after hearing a's leave, which a announces only once the broker has its envelope.
        #expect(moved.isEmpty || moved == ["\(alice) leave", "\(alice) join"], "she never ends up gone while she is on b: \(moved) \(seen.filter { $0["type"]?.stringValue == "presence" }.map { "\($0["via"]?.stringValue ?? "?") \($0["id"]?.stringValue ?? "?") \($0["ts"]?.intValue ?? 0)" })")
        _ = await a6.close()
        #expect(try await Self.awaitUsers(a, route: room, [], asking: bobName))
        #expect(try await Self.awaitUsers(b, route: room, [], asking: bobName))
        _ = try await bob.request(#"{"op":"pub","route":"\#(room)","body":"sentinel-g"}"#, expect: "puback")
        #expect(Self.changes(try await Self.envelopes(bob, until: "sentinel-g")) == ["\(alice) leave"])

        // A node killed with -9: its users leave within presence.timeout.
        let c = try await WarrenInstance.start(env, exchange: a.exchange)
        defer { c.process.terminate() }
        let dave = uniqueUser("dave")
        let d = try await c.socket(dave)
        _ = try await d.request(#"{"op":"sub","id":"p","pattern":"\#(room)","presence":true}"#, expect: "subscribed")
        let daveJoined = try await bob.next(op: "msg")
        #expect(Self.changes([daveJoined["env"] ?? .null]) == ["\(dave) join"])
        #expect(try await Self.awaitUsers(b, route: room, [dave], asking: bobName))
        c.process.process.signal(SIGKILL)
        _ = await c.process.waitForExit()
        let daveLeft = try await bob.next(op: "msg", timeout: .seconds(30))
        #expect(Self.changes([daveLeft["env"] ?? .null]) == ["\(dave) leave"])
        #expect(try await Self.awaitUsers(a, route: room, [], asking: bobName))
        #expect(try await Self.awaitUsers(b, route: room, [], asking: bobName), "each node forgets the dead one within a second of the other")

        // Refusals: presence on a pattern, and asking about a route outside one's rights.
        let wild = try await bob.request(#"{"op":"sub","id":"x","pattern":"room.*","presence":true}"#, expect: "error")
        #expect(wild["code"]?.stringValue == "bad_frame")
        let outside = try await Self.presence(a, user: bobName, route: "\(alice).\(carol)")
        #expect(outside.status == 403)
        let asked = try await bob.request(#"{"op":"presence","id":"q1","route":"\#(room)"}"#, expect: "presence")
        #expect(asked["users"]?.arrayValue?.isEmpty == true)

        await observer.close()
        _ = await bob.close()
        await b.stop()
        await a.stop()
    }
}
