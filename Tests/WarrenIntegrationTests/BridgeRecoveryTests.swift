import AMQPClient
import Foundation
import NIOCore
import Testing
import WarrenCore

@Suite("Bridge across broker drops", .serialized)
struct BridgeRecoveryTests {
    /// The broker drops Warren's connection while sockets are subscribed: after recovery, live and
    /// inbox subscriptions deliver again without the clients doing anything.
    @Test func subscriptionsSurviveCloseAllConnections() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let (a, b, c, route) = try await Self.liveInboxAndPublisher(warren)

        try Broker.ctl("close_all_connections", "test: drop warren")
        #expect(await Self.bothConnectionsRecovered(warren), "log:\n\(warren.process.log)")

        try await Self.publishAfter(c, a, b, route, warren)
    }

    /// After `close_all_connections`: both of the node's broker connections (`amqp.connections`,
    /// 2 by default) are back. RabbitMQ closes them one after the other, so "broker link up" can
    /// come from the first one's recovery while the second is still up, and be followed by the
    /// second one's loss: a publish then meets a connection recovering and is answered
    /// `unavailable` (the likeliest reading of one CI run where no `puback` came; the log shows
    /// "broker link up" whenever every connection is up at that instant). Each connection says
    /// "AMQP connection recovered" once it is back with its channels, the publishing one included.
    static func bothConnectionsRecovered(_ warren: WarrenInstance) async -> Bool {
        await warren.process.waitForLog("AMQP connection recovered", times: 2, timeout: .seconds(60))
    }

    /// `c` publishes once more and `a` (live) and `b` (inbox) get it; a publish not acknowledged
    /// is reported with the node's log.
    static func publishAfter(_ c: TestSocket, _ a: TestSocket, _ b: TestSocket, _ route: String, _ warren: WarrenInstance) async throws {
        do {
            _ = try await c.request(#"{"op":"pub","route":"\#(route)","body":"after"}"#, expect: "puback")
        } catch {
            Issue.record("\(error)\nlog:\n\(warren.process.log)")
            throw error
        }
        #expect(try await a.next(op: "msg").env?["body"] == .string("after"))
        #expect(try await b.next(op: "msg").env?["body"] == .string("after"))
        for s in [a, b, c] { await s.close() }
    }

    /// Three sockets: `a` subscribed live and `b` to its inbox, both matching `route`, and `c`
    /// publishing there; one message has gone through (and `b` acked it).
    static func liveInboxAndPublisher(_ warren: WarrenInstance) async throws -> (TestSocket, TestSocket, TestSocket, String) {
        let alice = uniqueUser("alice"), bob = uniqueUser("bob"), carol = uniqueUser("carol")
        let a = try await warren.socket(alice)
        try await a.subscribe("live", "#.\(alice).#")
        let b = try await warren.socket(bob)
        try await b.subscribe("in", "#.\(bob).#", mode: "inbox")
        let c = try await warren.socket(carol)
        let route = "\(alice).\(bob).\(carol)"
        _ = try await c.request(#"{"op":"pub","route":"\#(route)","body":"before"}"#, expect: "puback")
        #expect(try await a.next(op: "msg").env?["body"] == .string("before"))
        let first = try await b.next(op: "msg")
        try await b.send(#"{"op":"ack","id":"\#(first.env!["id"]!.stringValue!)"}"#)
        return (a, b, c, route)
    }

    /// Past `amqp.live_bind_all_after` distinct patterns the node's live queue is bound with
    /// `#` (on the real broker: the patterns bound before it, then `#`, nothing after), each
    /// socket still gets only what its pattern matches, and the `#` binding is restored when
    /// the broker drops Warren's connection.
    @Test func pastTheLimitTheLiveQueueIsBoundWithHashAndRecoversIt() async throws {
        let warren = try await WarrenInstance.start(["WARREN_AMQP_LIVE_BIND_ALL_AFTER": "2"])
        defer { Task { await warren.stop() } }
        let tag = UUID().uuidString.prefix(6).lowercased()
        let rooms = (0..<4).map { "room.r\($0)\(tag)" }
        var sockets: [TestSocket] = []
        for (i, room) in rooms.enumerated() {
            let s = try await warren.socket(uniqueUser("u\(i)"))
            try await s.subscribe("r", room)
            sockets.append(s)
        }
        let queue = "warren.live.\(warren.nodeID)"
        func liveBindings() throws -> Set<String> {
            let rows = try Broker.ctl("list_bindings", "source_name", "destination_name", "routing_key")
            return Set(rows.split(separator: "\n").compactMap { line -> String? in
                let cols = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
                return cols.count == 3 && cols[0] == warren.exchange && cols[1] == queue ? cols[2] : nil
            })
        }
        #expect(try liveBindings() == [rooms[0], rooms[1], "#"])

        func roundTrip(_ label: String) async throws {
            let publisher = sockets[0]
            // A route no socket subscribes to first: it reaches the node now and must go nowhere.
            _ = try await publisher.request(#"{"op":"pub","route":"room.none\#(tag)","body":"stray"}"#, expect: "puback")
            for (i, room) in rooms.enumerated() {
                _ = try await publisher.request(#"{"op":"pub","route":"\#(room)","body":"\#(label)\#(i)"}"#, expect: "puback")
            }
            for (i, s) in sockets.enumerated() {
                // Each socket's first message is its own room's: nothing stray or foreign before it.
                #expect(try await s.next(op: "msg").env?["body"] == .string("\(label)\(i)"), "socket \(i) \(label)")
            }
        }
        try await roundTrip("before")
        try Broker.ctl("close_all_connections", "test: drop warren")
        #expect(await Self.bothConnectionsRecovered(warren), "log:\n\(warren.process.log)")
        #expect(try liveBindings() == [rooms[0], rooms[1], "#"])
        try await roundTrip("after")
        for s in sockets { await s.close() }
    }

    /// An operator deletes the conversation exchange (its bindings go with it): the node finds it
    /// gone, declares it again and binds again its live queue and the inboxes open on it. A
    /// publish in between is answered `unavailable` (never a puback for a message routed nowhere);
    /// once the node has restored its bindings, live and inbox subscribers receive again
    /// without doing anything.
    @Test func aDeletedExchangeIsDeclaredAgainWithTheNodesBindings() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let (a, b, c, route) = try await Self.liveInboxAndPublisher(warren)

        let connection = try await AMQPConnection.connect(configuration: try AMQPConfiguration(url: WarrenInstance.brokerURL))
        let channel = try await connection.openChannel()
        try await channel.exchangeDelete(warren.exchange)
        await connection.close()
        // Until the node has noticed, a publish has no exchange to go to: `unavailable`.
        let refused = try await c.request(#"{"op":"pub","route":"\#(route)","body":"lost","cid":"gone"}"#, expect: "error")
        #expect(refused["code"]?.stringValue == "unavailable" && refused["ref"]?.stringValue == "gone", "\(refused)")
        #expect(await warren.process.waitForLog("this node's bindings restored", timeout: .seconds(30)), "log:\n\(warren.process.log)")
        try await Self.publishAfter(c, a, b, route, warren)
    }
}
