import AMQPClient
import Logging
import NIOCore
import Testing
@testable import WarrenCore

/// DESIGN §2's `(from, cid)` rule across nodes: a send one node confirmed, retried on another
/// (a balancer without stickiness; the retry of a publish whose answer was lost on the way),
/// is answered there with the first ids and not published again.
@Suite("A send confirmed on one node, retried on another")
struct CrossNodeSendTests {
    struct Node {
        let presence: Presence
        let publisher: Publisher
        let announcements: FakeChannel
        let broker: FakeChannel

        init(_ id: String) {
            let logger = Logger(label: "test")
            announcements = FakeChannel("presence-\(id)")
            broker = FakeChannel("publish-\(id)")
            publisher = Publisher(channel: broker, exchange: "chat", metrics: .disabled, logger: logger)
            presence = Presence(node: id, settings: PresenceSettings(), exchange: "chat.presence", channel: announcements,
                                publisher: publisher, metrics: .disabled, logger: logger)
        }

        func hear(_ body: String) {
            presence.deliver(AMQPMessage(body: ByteBuffer(string: body), properties: BasicProperties(contentType: "application/json"),
                                         exchange: "chat.presence", routingKey: "", redelivered: false,
                                         deliveryTag: DeliveryTag(epoch: 1, value: 1), consumerTag: "p"))
        }

        func publish(_ cid: String, from: String = "alice") async throws -> [String] {
            let request = PublishRequest(routes: [try RouteKey("alice.bob"), try RouteKey("alice.carol")], multicast: true, type: "text",
                                         body: .string("hi"), cid: cid, transient: false, headers: [])
            return try await publisher.publish(request, from: from, via: .poll, maxMessageBytes: 65536)
        }

        var sentAnnouncements: [String] { announcements.bodies.filter { $0.contains(#""kind":"sent""#) } }
    }

    @Test func aRetryOnAnotherNodeGetsTheFirstIDs() async throws {
        let n1 = Node("n1"), n2 = Node("n2")
        // Alone (no other node heard from): nothing is told.
        _ = try await n1.publish("c0")
        #expect(n1.sentAnnouncements.isEmpty)

        n1.hear(String(decoding: PresenceAnnouncement.state(node: "n2", entries: []).encoded(), as: UTF8.self))
        let ids = try await n1.publish("c1")
        let told = try #require(n1.sentAnnouncements.first)
        #expect(PresenceAnnouncement.decode(Array(told.utf8)) == .sent(node: "n1", from: "alice", cid: "c1", ids: ids))
        n2.hear(told)
        #expect(try await n2.publish("c1") == ids)
        #expect(n2.broker.messageIDs.isEmpty, "published again: \(n2.broker.messageIDs)")
        // Another sender's same cid is another send; a node's own announcement, heard back, is nothing new.
        let bobs = try await n2.publish("c1", from: "bob")
        #expect(Set(bobs).isDisjoint(with: ids))
        n1.hear(told)
        #expect(try await n1.publish("c1") == ids)
        #expect(n1.broker.messageIDs.count == 4)
    }

    @Test func aSendNeverOverridesOneThisNodeConfirmed() {
        var cache = DedupCache()
        cache.remember(from: "alice", cid: "c1", ids: ["mine"], nowMilliseconds: 0)
        cache.rememberElsewhere(from: "alice", cid: "c1", ids: ["theirs"], nowMilliseconds: 1)
        #expect(cache.lookup(from: "alice", cid: "c1", nowMilliseconds: 2) == ["mine"])
        cache.rememberAttempt(from: "alice", cid: "c2", routes: ["alice.bob"], ids: ["tried"], nowMilliseconds: 0)
        cache.rememberElsewhere(from: "alice", cid: "c2", ids: ["theirs"], nowMilliseconds: 1)
        #expect(cache.lookup(from: "alice", cid: "c2", nowMilliseconds: 2) == ["theirs"])
    }
}
