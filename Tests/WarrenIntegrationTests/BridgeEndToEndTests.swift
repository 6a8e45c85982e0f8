import AMQPClient
import Foundation
import NIOCore
import Testing
import WarrenCore

extension JSONValue {
    var env: JSONValue? { self["env"] }
    var text: String { String(decoding: encoded, as: UTF8.self) }
}

@Suite("Bridge end to end", .serialized)
struct BridgeEndToEndTests {
    @Test func websocketAndAMQPClientsShareAConversation() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let alice = uniqueUser("alice"), bob = uniqueUser("bob")
        let route = "\(alice).\(bob)"
        let a = try await warren.socket(alice)
        let b = try await warren.socket(bob)
        try await a.subscribe("s1", "#.\(alice).#")
        try await b.subscribe("s1", "#.\(bob).#")
        let observer = try await AMQPObserver.bound(to: warren.exchange, pattern: "#.\(bob).#")
        defer { Task { await observer.close() } }

        let puback = try await a.request(#"{"op":"pub","route":"\#(route)","body":"hi bob","cid":"c1","from":"mallory"}"#, expect: "puback")
        let id = try #require(puback["id"]?.stringValue)
        #expect(puback["cid"]?.stringValue == "c1")

        let atBob = try #require(try await b.next(op: "msg").env)
        #expect(atBob["id"]?.stringValue == id)
        #expect(atBob["from"]?.stringValue == alice, "Warren stamps the sender; a client's from is ignored")
        #expect(atBob["via"]?.stringValue == "ws" && atBob["route"]?.stringValue == route && atBob["body"] == .string("hi bob"))
        let atAlice = try #require(try await a.next(op: "msg").env)
        #expect(atAlice == atBob)

        let viaAMQP = try #require(await observer.messages.next(timeout: .seconds(10)))
        #expect(String(buffer: viaAMQP.body) == atBob.text, "the AMQP consumer receives the same envelope bytes")
        #expect(viaAMQP.properties.messageID == id && viaAMQP.properties.appID == "warren")
        #expect(viaAMQP.properties.headers?["from"]?.stringValue == alice)

        // bob answers
        _ = try await b.request(#"{"op":"pub","route":"\#(route)","body":{"text":"hi alice"},"cid":"c2"}"#, expect: "puback")
        let reply = try #require(try await a.next(op: "msg").env)
        #expect(reply["from"]?.stringValue == bob && reply["body"] == .object([(key: "text", value: .string("hi alice"))]))
        _ = try await b.next(op: "msg")
        _ = await observer.messages.next(timeout: .seconds(10))

        // A plain AMQP client's text message reaches both sockets wrapped as an envelope.
        try await observer.channel.publish("from a service", exchange: warren.exchange, routingKey: route,
                                           properties: BasicProperties(contentType: "text/plain", appID: "billing"))
        for socket in [a, b] {
            let env = try #require(try await socket.next(op: "msg").env)
            #expect(env["via"]?.stringValue == "amqp" && env["body"] == .string("from a service"))
            #expect(env["from"]?.stringValue == "billing" && env["type"]?.stringValue == "raw" && env["route"]?.stringValue == route)
            #expect(env["id"]?.stringValue?.count == 36)
        }
        await a.close()
        await b.close()
    }

    @Test func groupKeysAndMulticast() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let names = ["alice", "bob", "carol", "dave"].map(uniqueUser)
        var sockets: [TestSocket] = []
        for n in names {
            let s = try await warren.socket(n)
            try await s.subscribe("me", "#.\(n).#")
            sockets.append(s)
        }
        let group = names[0...2].sorted().joined(separator: ".")
        _ = try await sockets[0].request(#"{"op":"pub","route":"\#(group)","body":"to the group","cid":"g1"}"#, expect: "puback")
        for s in sockets[0...2] {
            let env = try #require(try await s.next(op: "msg").env)
            #expect(env["route"]?.stringValue == group)
        }
        #expect(await sockets[3].next(timeout: .milliseconds(500)) == nil, "dave is not in the group")

        // Multicast: two routes, two envelopes, one puback with two ids in route order.
        let r1 = "\(names[0]).\(names[1])", r2 = "\(names[0]).\(names[3])"
        let ack = try await sockets[0].request(#"{"op":"pub","routes":["\#(r1)","\#(r2)"],"body":"both","cid":"m1"}"#, expect: "puback")
        let ids = (ack["ids"]?.arrayValue ?? []).compactMap { $0.stringValue }
        #expect(ids.count == 2 && ids[0] != ids[1])
        let atBob = try #require(try await sockets[1].next(op: "msg").env)
        let atDave = try #require(try await sockets[3].next(op: "msg").env)
        #expect(atBob["id"]?.stringValue == ids[0] && atBob["route"]?.stringValue == r1)
        #expect(atDave["id"]?.stringValue == ids[1] && atDave["route"]?.stringValue == r2)
        var toAlice = Set<String>()
        for _ in 0..<2 { toAlice.insert(try #require(try await sockets[0].next(op: "msg").env?["id"]?.stringValue)) }
        #expect(toAlice == Set(ids))

        // A retried send with the same cid is acknowledged with the first ids and not published again.
        let again = try await sockets[0].request(#"{"op":"pub","routes":["\#(r1)","\#(r2)"],"body":"both","cid":"m1"}"#, expect: "puback")
        #expect((again["ids"]?.arrayValue ?? []).compactMap { $0.stringValue } == ids)
        #expect(await sockets[1].next(timeout: .milliseconds(500)) == nil, "no second copy")
        for s in sockets { await s.close() }
    }

    @Test func inboxKeepsMessagesForAnAbsentClientAndRedeliversUnacked() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let alice = uniqueUser("alice"), bob = uniqueUser("bob")
        let route = "\(alice).\(bob)"

        // bob subscribes once (binding his inbox), then leaves.
        let bob1 = try await warren.socket(bob, device: "phone")
        try await bob1.subscribe("in", "#.\(bob).#", mode: "inbox")
        await bob1.close()

        let a = try await warren.socket(alice)
        for i in 0..<100 {
            _ = try await a.request(#"{"op":"pub","route":"\#(route)","body":\#(i),"cid":"n\#(i)"}"#, expect: "puback")
        }

        let bob2 = try await warren.socket(bob, device: "phone")
        try await bob2.send("{\"op\":\"sub\",\"id\":\"in\",\"pattern\":\"#.\(bob).#\",\"mode\":\"inbox\"}")
        var received: [(id: String, n: Int)] = []
        while received.count < 100 {
            let f = try #require(await bob2.next(), "got \(received.count) of 100")
            guard f["op"]?.stringValue == "msg", let env = f.env else { continue }
            received.append((env["id"]!.stringValue!, Int(env["body"]!.intValue!)))
            #expect(f["redelivered"] == nil)
        }
        #expect(received.map(\.n) == Array(0..<100), "all 100, in order")
        for r in received.prefix(50) { try await bob2.send(#"{"op":"ack","id":"\#(r.id)"}"#) }
        try await bob2.send(#"{"op":"ack","id":"00000000-0000-7000-8000-000000000000"}"#)
        let notFound = try await bob2.next(op: "error")
        #expect(notFound["code"]?.stringValue == "not_found")
        await bob2.close()

        let bob3 = try await warren.socket(bob, device: "phone")
        try await bob3.subscribe("in", "#.\(bob).#", mode: "inbox")
        var again: [Int] = []
        while again.count < 50 {
            let f = try await bob3.next(op: "msg")
            #expect(f["redelivered"] == .bool(true))
            again.append(Int(f.env!["body"]!.intValue!))
            try await bob3.send(#"{"op":"ack","id":"\#(f.env!["id"]!.stringValue!)"}"#)
        }
        #expect(again.sorted() == Array(50..<100))
        #expect(await bob3.next(timeout: .milliseconds(500)) == nil, "the acked 50 do not come back")
        await bob3.close()
        await a.close()
    }

    @Test func anInboxCopyUnderAnIDTheClientHoldsIsSettledNotSentTwice() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let bob = uniqueUser("bob")
        let amqp = try await AMQPObserver.bound(to: warren.exchange, pattern: "nobody.\(bob)")
        defer { Task { await amqp.close() } }
        let bob1 = try await warren.socket(bob, device: "phone")
        try await bob1.subscribe("in", "#.\(bob).#", mode: "inbox")

        // A service publishes, misses the confirm, publishes again with the same message_id;
        // then a sentinel.
        let id = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8e01", sentinel = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8e02"
        for (mid, body) in [(id, "hello"), (id, "hello"), (sentinel, "sentinel")] {
            try await amqp.channel.publish(body, exchange: warren.exchange, routingKey: "svc.\(bob)",
                                           properties: BasicProperties(contentType: "text/plain", messageID: mid, appID: "svc"))
        }
        let first = try await bob1.next(op: "msg")
        #expect(first.env?["id"]?.stringValue == id)
        let second = try await bob1.next(op: "msg")
        #expect(second.env?["id"]?.stringValue == sentinel, "the copy is not sent: \(second)")

        // One ack settles the id; nothing is left outstanding, so nothing comes again.
        try await bob1.send(#"{"op":"ack","ids":["\#(id)","\#(sentinel)"]}"#)
        await bob1.close()
        let bob2 = try await warren.socket(bob, device: "phone")
        try await bob2.subscribe("in", "#.\(bob).#", mode: "inbox")
        let after = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8e03"
        try await amqp.channel.publish("after", exchange: warren.exchange, routingKey: "svc.\(bob)",
                                       properties: BasicProperties(contentType: "text/plain", messageID: after, appID: "svc"))
        let next = await bob2.next(timeout: .seconds(20)) { $0["op"]?.stringValue == "msg" || $0["op"]?.stringValue == "error" }
        #expect(next?["op"]?.stringValue == "msg" && next?.env?["id"]?.stringValue == after, "\(String(describing: next))")
        await bob2.close()
    }

    @Test func accessControlAndSpoofing() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let alice = uniqueUser("alice"), bob = uniqueUser("bob"), carol = uniqueUser("carol")
        let b = try await warren.socket(bob)
        for (k, pattern) in ["#", "\(alice).#", "#.\(alice).#"].enumerated() {
            let e = try await b.request(#"{"op":"sub","id":"x\#(k)","pattern":"\#(pattern)"}"#, expect: "error")
            #expect(e["code"]?.stringValue == "forbidden" && e["ref"]?.stringValue == "x\(k)")
        }
        let e = try await b.request(#"{"op":"pub","route":"\#(alice).\#(carol)","body":"sneaky","cid":"p1"}"#, expect: "error")
        #expect(e["code"]?.stringValue == "forbidden" && e["ref"]?.stringValue == "p1")
        // A multicast with one forbidden route publishes nothing.
        let observer = try await AMQPObserver.bound(to: warren.exchange, pattern: "#")
        defer { Task { await observer.close() } }
        let m = try await b.request(#"{"op":"pub","routes":["\#(alice).\#(bob)","\#(alice).\#(carol)"],"body":"x","cid":"p2"}"#, expect: "error")
        #expect(m["code"]?.stringValue == "forbidden")
        #expect(await observer.messages.next(timeout: .milliseconds(500)) == nil)
        // The socket stays usable.
        try await b.subscribe("ok", "#.\(bob).#")
        let pong = try await b.request(#"{"op":"ping"}"#, expect: "pong")
        #expect(pong["op"]?.stringValue == "pong")
        await b.close()
    }
}
