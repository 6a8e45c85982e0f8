import AMQPClient
import Foundation
import Testing
import WarrenCore

@Suite("Presence of poll sessions", .serialized)
struct PollPresenceTests {
    @Test func aPollSessionJoinsAndItsDeleteLeaves() async throws {
        let node = try await WarrenInstance.start()
        defer { node.process.terminate() }
        let room = "room.q\(UUID().uuidString.prefix(6).lowercased())"
        let watcher = try await node.socket(uniqueUser("bob"))
        try await watcher.subscribe("w", room)
        let carol = uniqueUser("carol")
        let poller = try await Poller.open(port: node.port, user: carol,
                                           subscriptions: #"[{"id":"p","pattern":"\#(room)","presence":true}]"#)
        let joined = try await watcher.next(op: "msg")
        #expect(PresenceIntegrationTests.changes([joined["env"] ?? .null]) == ["\(carol) join"])
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
}
