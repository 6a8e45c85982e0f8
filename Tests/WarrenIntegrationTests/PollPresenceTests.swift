import AMQPClient
import Foundation
import Testing
import WarrenCore

@Suite("Presence of poll sessions", .serialized)
struct PollPresenceTests {
    /// Bob watches a new room on `node`; carol opens a poll session there with a presence
    /// subscription to it, and bob sees her join.
    static func carolPollsWhileBobWatches(on node: WarrenInstance) async throws
        -> (room: String, watcher: TestSocket, carol: String, poller: Poller) {
        let room = "room.q\(UUID().uuidString.prefix(6).lowercased())"
        let watcher = try await node.socket(uniqueUser("bob"))
        try await watcher.subscribe("w", room)
        let carol = uniqueUser("carol")
        let poller = try await Poller.open(port: node.port, user: carol,
                                           subscriptions: #"[{"id":"p","pattern":"\#(room)","presence":true}]"#)
        #expect(PresenceIntegrationTests.changes([try await watcher.next(op: "msg")["env"] ?? .null]) == ["\(carol) join"])
        return (room, watcher, carol, poller)
    }

    @Test func aPollSessionJoinsAndItsDeleteLeaves() async throws {
        let node = try await WarrenInstance.start()
        defer { node.process.terminate() }
        let (room, watcher, carol, poller) = try await Self.carolPollsWhileBobWatches(on: node)
        #expect(try await PresenceIntegrationTests.awaitUsers(node, route: room, [carol], asking: carol))
        let deleted = try await HTTPTestClient.request(.DELETE, port: node.port, "/v1/poll/\(poller.session)?user=\(carol)")
        #expect(deleted.status == 204)
        let left = try await watcher.next(op: "msg")
        #expect(PresenceIntegrationTests.changes([left["env"] ?? .null]) == ["\(carol) leave"])
        let wild = try await HTTPTestClient.request(.POST, port: node.port, "/v1/poll?user=\(carol)",
                                                    body: #"{"subscriptions":[{"id":"p","pattern":"room.#","presence":true}]}"#)
        #expect(wild.status == 400)
        _ = await watcher.close()
        await node.stop()
    }

    /// A session polled on two nodes (a load balancer without stickiness) and deleted on one:
    /// the other ends it too, at once — its user leaves at once rather than after
    /// `poll.session_ttl` (120 s), and a poll there is `not_found` rather than opening it again.
    @Test func aSessionDeletedOnOneNodeEndsOnEveryNode() async throws {
        let exchange = "test.chat.\(UUID().uuidString.prefix(8).lowercased())"
        let nodeA = try await WarrenInstance.start(exchange: exchange)
        let nodeB = try await WarrenInstance.start(exchange: exchange)
        let nodeC = try await WarrenInstance.start(exchange: exchange)   // serves no poll before the delete
        let (room, watcher, carol, poller) = try await Self.carolPollsWhileBobWatches(on: nodeA)
        _ = try await poller.poll(on: nodeB.port)   // open on node B as well
        #expect(try await PresenceIntegrationTests.awaitUsers(nodeA, route: room, [carol], asking: carol))

        let deleted = try await HTTPTestClient.request(.DELETE, port: nodeB.port, "/v1/poll/\(poller.session)?user=\(carol)")
        #expect(deleted.status == 204)
        // Bounded well below poll.session_ttl and presence.timeout.
        let left = try await watcher.next(op: "msg", timeout: .seconds(20))
        #expect(PresenceIntegrationTests.changes([left["env"] ?? .null]) == ["\(carol) leave"])
        let again = try await HTTPTestClient.request(.GET, port: nodeA.port, "/v1/poll/\(poller.session)?user=\(carol)&wait=0")
        #expect(again.status == 404, "\(again.status) \(again.body)")

        // Node C heard it too. A sentinel tells when: node B's next announcement (dave joining
        // through it) follows the deletion on the same exchange; once C counts dave present, a
        // poll of the deleted session there must not open it again.
        let dave = uniqueUser("dave")
        let daveSocket = try await nodeB.socket(dave)
        _ = try await daveSocket.request(#"{"op":"sub","id":"d","pattern":"\#(room)","presence":true}"#, expect: "subscribed")
        #expect(try await PresenceIntegrationTests.awaitUsers(nodeC, route: room, [dave], asking: dave))
        let onC = try await HTTPTestClient.request(.GET, port: nodeC.port, "/v1/poll/\(poller.session)?user=\(carol)&wait=0")
        #expect(onC.status == 404, "\(onC.status) \(onC.body)")
        _ = await daveSocket.close()
        _ = await watcher.close()
        await nodeA.stop()
        await nodeB.stop()
        await nodeC.stop()
    }

    /// With `presence.enabled = false` the deletion reaches the other nodes all the same (the
    /// node's presence queue is kept for it). Node A logs ending the session it had open.
    @Test func aSessionDeletedOnOneNodeEndsOnTheOthersWithPresenceOff() async throws {
        let exchange = "test.chat.\(UUID().uuidString.prefix(8).lowercased())"
        let environment = ["WARREN_PRESENCE_ENABLED": "false"]
        let nodeA = try await WarrenInstance.start(environment, exchange: exchange)
        let nodeB = try await WarrenInstance.start(environment, exchange: exchange)
        let carol = uniqueUser("carol")
        let poller = try await Poller.open(port: nodeA.port, user: carol,
                                           subscriptions: #"[{"id":"p","pattern":"room.q\#(UUID().uuidString.prefix(6).lowercased())"}]"#)
        _ = try await poller.poll(wait: 0)
        _ = try await poller.poll(wait: 0, on: nodeB.port)
        let deleted = try await HTTPTestClient.request(.DELETE, port: nodeB.port, "/v1/poll/\(poller.session)?user=\(carol)")
        #expect(deleted.status == 204)
        // Bounded well below poll.session_ttl (120 s).
        #expect(await nodeA.process.waitForLog("deleted on another node", times: 1, timeout: .seconds(20)))
        let again = try await HTTPTestClient.request(.GET, port: nodeA.port, "/v1/poll/\(poller.session)?user=\(carol)&wait=0")
        #expect(again.status == 404, "\(again.status) \(again.body)")
        // Presence itself is off: the queue kept for this announces none.
        let asked = try await HTTPTestClient.request(.GET, port: nodeB.port, "/v1/presence?route=room.x&user=\(carol)")
        #expect(asked.status == 503 && asked.body.contains("unavailable"), "\(asked.status) \(asked.body)")
        await nodeA.stop()
        await nodeB.stop()
    }
}
