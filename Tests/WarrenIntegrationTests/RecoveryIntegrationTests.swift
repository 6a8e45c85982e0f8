import Foundation
import NIOCore
import Testing
import TestSupport
import WarrenCore

/// Recovery on resubscribe end to end (docs/protocol.md, "Recovery"): a real broker, both
/// store backends, real sockets and streams cut in the middle of a conversation.
@Suite("Recovery on resubscribe", .serialized)
struct RecoveryIntegrationTests {
    /// Nodes on one exchange, store and store queue (deleted afterwards).
    static func withNodes(_ backend: StoreBackend, count: Int, settings: [String: String] = [:],
                          _ body: ([WarrenInstance]) async throws -> Void) async throws {
        let (url, remove) = try await StoreTests.makeDatabase(backend)
        let queue = "test.store.\(UUID().uuidString.prefix(8).lowercased())"
        let exchange = "test.chat.\(UUID().uuidString.prefix(8).lowercased())"
        let env = ["WARREN_STORE_ENABLED": "true", "WARREN_STORE_URL": url, "WARREN_STORE_QUEUE": queue].merging(settings) { $1 }
        var nodes: [WarrenInstance] = []
        do {
            for _ in 0..<count { nodes.append(try await WarrenInstance.start(env, exchange: exchange)) }
            try await body(nodes)
        } catch {
            for node in nodes { await node.stop() }
            await remove()
            try? await StoreTests.deleteQueue(queue)
            throw error
        }
        for node in nodes { await node.stop() }
        await remove()
        try await StoreTests.deleteQueue(queue)
    }

    /// Publishes `count` numbered messages to `room` at about 100 a second, then `end`.
    static func converse(_ publisher: TestSocket, room: String, count: Int) -> Task<Void, Error> {
        Task {
            for i in 0..<count {
                _ = try await publisher.request(#"{"op":"pub","route":"\#(room)","body":"\#(i)"}"#, expect: "puback")
                try await Task.sleep(for: .milliseconds(10))
            }
            _ = try await publisher.request(#"{"op":"pub","route":"\#(room)","body":"end"}"#, expect: "puback")
        }
    }

    /// A socket cut for 5 s during a 100 msg/s room comes back with `since` and gets every
    /// message once, in order: from the store, then live; on the node it left or another.
    @Test(arguments: StoreBackend.allCases, [false, true])
    func aSocketCutDuringAConversationMissesNothingAndGetsNothingTwice(_ backend: StoreBackend, otherNode: Bool) async throws {
        try await Self.withNodes(backend, count: otherNode ? 2 : 1) { nodes in
            let alice = uniqueUser("alice"), bob = uniqueUser("bob"), room = "room.\(uniqueUser("r"))"
            let publisher = try await nodes[0].socket(alice)
            let reader = try await nodes[0].socket(bob)
            try await reader.subscribe("r", room)
            let count = 800
            let conversation = Self.converse(publisher, room: room, count: count)
            var bodies: [String] = []
            var last = ""
            while bodies.count < 150 {
                let msg = try await reader.next(op: "msg")
                bodies.append(msg["env"]?["body"]?.stringValue ?? "?")
                last = msg["env"]?["id"]?.stringValue ?? ""
            }
            _ = await reader.close()
            try await Task.sleep(for: .seconds(5))  // the cut (a scenario's length, not a wait for an event)
            let back = try await nodes[otherNode ? 1 : 0].socket(bob)
            let answer = try await back.request(#"{"op":"sub","id":"r","pattern":"\#(room)","since":"\#(last)"}"#, expect: "subscribed")
            #expect(answer["recovered"] == .bool(true), "\(answer)")
            while bodies.last != "end" {
                bodies.append(try await back.next(op: "msg", timeout: .seconds(30))["env"]?["body"]?.stringValue ?? "?")
            }
            try await conversation.value
            #expect(bodies == (0..<count).map(String.init) + ["end"], "\(bodies.count) bodies; first wrong at \(String(describing: zip(bodies, (0..<count).map(String.init)).enumerated().first { $1.0 != $1.1 }))")
            _ = await back.close()
            _ = await publisher.close()
        }
    }

    /// `recovered: false` and why, for each reason; `since` outside one's rights is `forbidden`.
    @Test func whyARecoveryIsNotWhole() async throws {
        let settings = ["WARREN_RECOVER_MAX_MESSAGES": "3", "WARREN_STORE_PATTERNS": "room.#, #.carol.#"]
        try await Self.withNodes(.sqlite, count: 1, settings: settings) { nodes in
            let node = nodes[0]
            let alice = uniqueUser("alice"), room = "room.\(uniqueUser("r"))"
            let socket = try await node.socket(alice)
            var ids: [String] = []
            for i in 0..<5 {
                ids.append(try await socket.request(#"{"op":"pub","route":"\#(room)","body":"\#(i)"}"#, expect: "puback")["id"]!.stringValue!)
            }
            let secret = try await socket.request(#"{"op":"pub","route":"\#(alice).carol","body":"secret"}"#, expect: "puback")["id"]!.stringValue!
            try await StoreTests.awaitStored(node, user: alice, route: room, ids: ids)
            func sub(_ user: String, _ pattern: String, since: String) async throws -> (answer: JSONValue, socket: TestSocket) {
                let s = try await node.socket(user)
                let a = try await s.request(#"{"op":"sub","id":"s","pattern":"\#(pattern)","since":"\#(since)"}"#, expect: "subscribed")
                return (a, s)
            }
            #expect(try await sub(alice, room, since: "0b6f7a52-3c7e-4d8a-9a51-7c2f0e6d1b23").answer["reason"] == .string("unknown_id"))
            let yearAgo = UUIDv7Generator().next(nowMilliseconds: UInt64(Date().timeIntervalSince1970 * 1000) - 365 * 86_400_000)
            #expect(try await sub(alice, room, since: yearAgo).answer["reason"] == .string("retention"))
            #expect(try await sub(alice, "#.\(alice).#", since: ids[0]).answer["reason"] == .string("not_stored"))
            let (many, reader) = try await sub(alice, room, since: ids[0])
            #expect(many["recovered"] == .bool(false) && many["reason"] == .string("too_many"), "\(many)")
            var replayed: [String] = []
            for _ in 0..<3 { replayed.append(try await reader.next(op: "msg")["env"]?["id"]?.stringValue ?? "") }
            #expect(replayed == Array(ids.suffix(3)), "the newest recover.max_messages, oldest first")
            // The secret is alice's conversation with carol: bob may not read it, nor name it.
            let bob = try await node.socket(uniqueUser("bob"))
            let refused = try await bob.request(#"{"op":"sub","id":"s","pattern":"\#(room)","since":"\#(secret)"}"#, expect: "error")
            #expect(refused["code"] == .string("forbidden") && refused["ref"] == .string("s"), "\(refused)")
        }
    }

    /// The store down: `recovered: false, store_unavailable`, and the subscription is live.
    @Test func aRecoveryWhileTheStoreIsDownSaysSoAndGoesLive() async throws {
        let (url, remove) = try await StoreTests.makeDatabase(.postgres)
        var parts = URLComponents(string: url)!
        let proxy = try await OutageProxy.start(to: parts.port!)
        parts.port = proxy.port
        let queue = "test.store.\(UUID().uuidString.prefix(8).lowercased())"
        let node = try await WarrenInstance.start(["WARREN_STORE_ENABLED": "true", "WARREN_STORE_URL": parts.string!, "WARREN_STORE_QUEUE": queue,
                                                   "WARREN_RECOVER_WAIT": "1"])
        let alice = uniqueUser("alice"), room = "room.\(uniqueUser("r"))"
        let socket = try await node.socket(alice)
        let first = try await socket.request(#"{"op":"pub","route":"\#(room)","body":"kept"}"#, expect: "puback")["id"]!.stringValue!
        try await StoreTests.awaitStored(node, user: alice, route: room, id: first)
        proxy.setDown(true)
        let deadline = ContinuousClock.now + .seconds(30)
        while try await HTTPTestClient.request(.GET, port: node.port, "/readyz").status != 503, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let reader = try await node.socket(alice)
        let answer = try await reader.request(#"{"op":"sub","id":"s","pattern":"\#(room)","since":"\#(first)"}"#, expect: "subscribed")
        _ = try await socket.request(#"{"op":"pub","route":"\#(room)","body":"live"}"#, expect: "puback")
        let live = try await reader.next(op: "msg")
        proxy.setDown(false)
        await node.stop()
        await remove()
        try await StoreTests.deleteQueue(queue)
        #expect(answer["recovered"] == .bool(false) && answer["reason"] == .string("store_unavailable"), "\(answer)")
        #expect(live["env"]?["body"] == .string("live"))
    }

    /// An `EventSource` cut mid-stream comes back with `Last-Event-ID` and misses nothing; a
    /// poll session created with `since` gets the replay in its first answer.
    @Test func anEventStreamAndAPollSessionResumeFromTheirLastMessage() async throws {
        try await Self.withNodes(.sqlite, count: 1) { nodes in
            let node = nodes[0]
            let alice = uniqueUser("alice"), bob = uniqueUser("bob"), room = "room.\(uniqueUser("r"))"
            let stream = try await EventStreamClient.open(port: node.port, query: "user=\(bob)&pattern=\(room)")
            #expect(await stream.status() == "HTTP/1.1 200 OK")
            _ = try await stream.events { $0.contains { $0.json?["op"] == .string("subscribed") } }
            let publisher = try await node.socket(alice)
            let count = 300
            let conversation = Self.converse(publisher, room: room, count: count)
            let before = try await stream.events { $0.filter { $0.name == nil }.count >= 100 }.filter { $0.name == nil }
            await stream.drop()
            let last = try #require(before.last?.id)
            try await Task.sleep(for: .seconds(1))  // the cut
            let again = try await EventStreamClient.open(port: node.port, query: "user=\(bob)&pattern=\(room)", lastEventID: last)
            let after = try await again.events { $0.last?.json?["body"] == .string("end") }
            try await conversation.value
            #expect(after.first { $0.name == "control" }?.json?["recovered"] == .bool(true))
            let bodies = (before + after.filter { $0.name == nil }).compactMap { $0.json?["body"]?.stringValue }
            #expect(bodies == (0..<count).map(String.init) + ["end"], "\(bodies.count) bodies")
            #expect(Set((before + after).compactMap(\.id)).count == count + 1, "every event's id is its envelope's")
            await again.drop()

            // A poll session made with `since`: its first poll has what came after.
            let ids = after.compactMap(\.id)
            let created = try await HTTPTestClient.request(.POST, port: node.port, "/v1/poll?user=\(bob)",
                                                           body: #"{"subscriptions":[{"id":"r","pattern":"\#(room)","since":"\#(ids[ids.count - 3])"}]}"#)
            #expect(created.json?["recovered"]?["r"]?["recovered"] == .bool(true), "\(created.body)")
            let session = try #require(created.json?["session"]?.stringValue)
            let poll = try await HTTPTestClient.request(.GET, port: node.port, "/v1/poll/\(session)?user=\(bob)&wait=0")
            let polled = poll.json?["messages"]?.arrayValue?.compactMap { $0["env"]?["id"]?.stringValue } ?? []
            #expect(polled == Array(ids.suffix(2)), "\(poll.body)")
            _ = await publisher.close()
        }
    }
}
