import AMQPClient
import Foundation
import TestSupport
import NIOCore
import Testing
import WarrenCore

@Suite("Several nodes, many pollers, the bot", .serialized)
struct MultiNodeTests {
    @Test func twoNodesShareConversationsSessionsAndInboxes() async throws {
        let exchange = "test.chat.\(UUID().uuidString.prefix(8).lowercased())"
        let nodeA = try await WarrenInstance.start(exchange: exchange)
        let nodeB = try await WarrenInstance.start(exchange: exchange)
        defer { Task { await nodeB.stop() } }
        let alice = uniqueUser("alice"), bob = uniqueUser("bob")
        let route = "\(alice).\(bob)"

        // A socket on node A and a poller on node B converse.
        let socket = try await nodeA.socket(alice)
        try await socket.subscribe("me", "#.\(alice).#")
        let poller = try await Poller.open(port: nodeB.port, user: bob, subscriptions: #"[{"id":"me","pattern":"\#(mine(bob))"}]"#)
        let sent = try await poller.publish(#"{"route":"\#(route)","body":"hello from B"}"#)
        #expect(try await socket.next(op: "msg").env?["id"] == sent["id"])
        let ack = try await socket.request(#"{"op":"pub","route":"\#(route)","body":"hello from A"}"#, expect: "puback")
        var got: JSONValue?
        var cursor: String?
        while got == nil {
            let (messages, c) = try await poller.poll(wait: 5, ack: cursor)
            cursor = c
            got = messages.first { $0.env?["id"] == ack["id"] }
        }

        // A session created on node A is served by node B: B buffers its live deliveries from
        // its first poll there (docs/protocol.md).
        let carol = uniqueUser("carol")
        let onA = try await Poller.open(port: nodeA.port, user: carol, subscriptions: #"[{"id":"me","pattern":"\#(mine(carol))"}]"#)
        #expect(try await onA.poll(wait: 0, on: nodeB.port).messages.isEmpty)
        _ = try await socket.request(#"{"op":"pub","route":"\#(alice).\#(carol)","body":"for carol"}"#, expect: "puback")
        let servedByB = try await onA.poll(wait: 5, on: nodeB.port)
        #expect(servedByB.messages.first?.env?["body"] == .string("for carol"))

        // Node A is killed while a socket on it holds unacked inbox messages: none are lost.
        let dave = uniqueUser("dave")
        let daveOnA = try await nodeA.socket(dave, device: "tablet")
        try await daveOnA.subscribe("in", "#.\(dave).#", mode: "inbox")
        var sentIDs = Set<String>()
        for i in 0..<20 {
            let r = try await socket.request(#"{"op":"pub","route":"\#(alice).\#(dave)","body":\#(i)}"#, expect: "puback")
            sentIDs.insert(r["id"]!.stringValue!)
        }
        for _ in 0..<20 { _ = try await daveOnA.next(op: "msg") }   // delivered, never acked
        nodeA.process.process.signal(SIGKILL)
        _ = await nodeA.process.waitForExit()

        let daveOnB = try await nodeB.socket(dave, device: "tablet")
        try await daveOnB.subscribe("in", "#.\(dave).#", mode: "inbox")
        var recovered = Set<String>()
        while recovered.count < 20 {
            let f = try await daveOnB.next(op: "msg", timeout: .seconds(30))
            recovered.insert(f.env!["id"]!.stringValue!)
            #expect(f["redelivered"] == .bool(true))
            try await daveOnB.send(#"{"op":"ack","id":"\#(f.env!["id"]!.stringValue!)"}"#)
        }
        #expect(recovered == sentIDs)
        await daveOnB.close()
    }

    /// A node consumes a session's inbox while its client polls there; once the client polls
    /// another node instead, the first hands back what it buffered, so no inbox delivery is
    /// stranded (live subscriptions are at most once: a client that moves may miss those).
    /// A node started with a node id whose queues another connection holds (a copied
    /// WARREN_NODE_ID, or a crashed host's connection the broker has not yet dropped) waits,
    /// not ready, and says why; once the id is free it starts. It stopped on RabbitMQ's
    /// RESOURCE_LOCKED before, and a restart loop met the same lock.
    @Test func aNodeWhoseIdIsTakenWaitsForIt() async throws {
        let first = try await WarrenInstance.start()
        let port = try freePort()
        let second = try WarrenProcess(["serve", "--config", "bridge.toml"], environment: [
            "WARREN_HTTP_LISTEN": "127.0.0.1:\(port)", "WARREN_AMQP_EXCHANGE": first.exchange, "WARREN_NODE_ID": first.nodeID,
            "WARREN_AMQP_URL": WarrenInstance.brokerURL, "WARREN_STORE_ENABLED": "false", "WARREN_AMQP_RECONNECT_MAX_MS": "500"])
        defer { second.terminate() }
        #expect(await second.waitForLog("held by another connection"), "\(second.log)")
        #expect(try await HTTPTestClient.request(.GET, port: port, "/readyz").status == 503)
        _ = await first.stop()
        #expect(await second.waitForLog("warren is ready"), "\(second.log)")
        #expect(try await HTTPTestClient.request(.GET, port: port, "/readyz").status == 200)
    }

    @Test func aClientThatMovesNodesGetsWhatTheFirstNodeBuffered() async throws {
        let exchange = "test.chat.\(UUID().uuidString.prefix(8).lowercased())"
        let nodeA = try await WarrenInstance.start(exchange: exchange)
        defer { Task { await nodeA.stop() } }
        let nodeB = try await WarrenInstance.start(exchange: exchange)
        defer { Task { await nodeB.stop() } }
        let erin = uniqueUser("erin")
        let poller = try await Poller.open(port: nodeA.port, user: erin,
                                           subscriptions: #"[{"id":"me","pattern":"\#(mine(erin))","mode":"inbox"}]"#)
        // A long-poll on A: A consumes erin's inbox; it ends empty.
        #expect(try await poller.poll(wait: 1).messages.isEmpty)
        // Published now, these go to A's consumer (the only one), though nobody polls A any more.
        var sent = Set<String>()
        for i in 0..<5 {
            sent.insert(try await poller.publish(#"{"route":"\#(erin).x","body":\#(i)}"#)["id"]!.stringValue!)
        }
        var got = Set<String>()
        var cursor: String?
        let deadline = ContinuousClock.now + .seconds(30)
        while got.count < 5, ContinuousClock.now < deadline {
            let (messages, c) = try await poller.poll(wait: 5, ack: cursor, on: nodeB.port)
            cursor = c
            for m in messages { got.insert(m.env!["id"]!.stringValue!) }
        }
        #expect(got == sent, "node B delivers what node A had buffered")
    }

    /// A load balancer without stickiness: each poll goes to the other node, acking the cursor
    /// of the answer before, which the other node made. The ack reaches the node that leased
    /// the batch and the inbox empties. Before, those acks were dropped: the batch stayed
    /// leased, came again after `poll.lease`, and the inbox never emptied while the poller
    /// alternated.
    /// With presence off too: the node's presence queue carries the ack all the same.
    @Test(arguments: [true, false]) func aPollersAckReachesTheNodeThatLeasedWhereverItPolls(presence: Bool) async throws {
        let exchange = "test.chat.\(UUID().uuidString.prefix(8).lowercased())"
        let environment = ["WARREN_PRESENCE_ENABLED": "\(presence)"]
        let nodeA = try await WarrenInstance.start(environment, exchange: exchange)
        defer { Task { await nodeA.stop() } }
        let nodeB = try await WarrenInstance.start(environment, exchange: exchange)
        defer { Task { await nodeB.stop() } }
        let fay = uniqueUser("fay")
        let poller = try await Poller.open(port: nodeA.port, user: fay,
                                           subscriptions: #"[{"id":"me","pattern":"\#(mine(fay))","mode":"inbox"}]"#, device: "rr")
        var sent = Set<String>()
        for i in 0..<3 { sent.insert(try await poller.publish(#"{"route":"\#(fay).x","body":\#(i)}"#)["id"]!.stringValue!) }
        // Polled on A until it answered all three (leased there)...
        var got = Set<String>()
        var cursor: String?
        while got.count < 3 {
            let (messages, c) = try await poller.poll(wait: 5, ack: cursor)
            cursor = c
            for m in messages { got.insert(m.env!["id"]!.stringValue!) }
        }
        #expect(got == sent)
        // ... then once on B, acking A's cursor.
        _ = try await poller.poll(wait: 0, ack: cursor, on: nodeB.port)
        // The queue empties (bounded well below poll.lease, 60 s, when A would hand them back).
        let queue = "warren.inbox.\(fay).rr"
        let left = try await Self.queueInfo(queue, "messages", until: "0")
        #expect(left == "0", "messages left in \(queue): \(left)")
        _ = try? Broker.ctl("delete_queue", queue)
    }

    /// An answer lost on its way from one node, whose client polls another next (a balancer
    /// without stickiness), comes again: the poll's ack goes on to the first node with the time
    /// the poll arrived, and that node hands back what its answers after the cursor held. Before
    /// 2026-11-29 it stayed leased there until the client's next cursor of that node acked it
    /// unseen. Bounded well below `poll.lease` (60 s), after which it would come back anyway.
    @Test func anAnswerLostOnOneNodeComesAgainThroughAnother() async throws {
        let exchange = "test.chat.\(UUID().uuidString.prefix(8).lowercased())"
        let nodeA = try await WarrenInstance.start(exchange: exchange)
        defer { Task { await nodeA.stop() } }
        let nodeB = try await WarrenInstance.start(exchange: exchange)
        defer { Task { await nodeB.stop() } }
        let gil = uniqueUser("gil")
        let poller = try await Poller.open(port: nodeA.port, user: gil,
                                           subscriptions: #"[{"id":"me","pattern":"\#(mine(gil))","mode":"inbox"}]"#, device: "rr")
        func bodies(_ messages: [JSONValue]) -> [String] { messages.compactMap { $0.env?["body"]?.stringValue } }
        _ = try await poller.publish(#"{"route":"\#(gil).x","body":"read"}"#)
        let read = try await poller.poll(wait: 5, ack: poller.firstCursor)
        #expect(bodies(read.messages) == ["read"])
        _ = try await poller.publish(#"{"route":"\#(gil).x","body":"lost"}"#)
        let lost = try await poller.poll(wait: 5, ack: read.cursor)
        #expect(bodies(lost.messages) == ["lost"])
        // Never read: the client polls B, then A, and so on, from the cursor of the answer it read.
        var cursor = read.cursor
        var got: [String] = []
        let deadline = ContinuousClock.now + .seconds(30)
        var node = nodeB
        while !got.contains("lost"), ContinuousClock.now < deadline {
            let answer = try await poller.poll(wait: 1, ack: cursor, on: node.port)
            cursor = answer.cursor
            got += bodies(answer.messages)
            node = node.port == nodeA.port ? nodeB : nodeA
        }
        #expect(got == ["lost"], "the answer never read comes again: \(got)")
        _ = try? Broker.ctl("delete_queue", "warren.inbox.\(gil).rr")
    }

    /// `queue`'s `column` in `rabbitmqctl list_queues` ("?" if not listed), asked every 100 ms
    /// until it reads `expected` (bounded: 20 s); the last value read.
    static func queueInfo(_ queue: String, _ column: String, until expected: String) async throws -> String {
        var value = "?"
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            let rows: [[String]] = try Broker.ctl("list_queues", "name", column, "--no-table-headers", "--quiet")
                .split(separator: "\n").map { line in line.split(separator: "\t").map(String.init) }
            value = rows.first { $0.first == queue }?.last ?? "?"
            if value == expected { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        return value
    }

    /// A long-poll parked on A whose client polls B instead (its connection to A gone without
    /// A noticing: one request at a time, so the poll on B says so): B's ack, come on to A,
    /// answers the parked poll at once, with nothing, so it cannot take a message later for a
    /// client that is gone. Before 2026-11-29 it stayed parked, and the next message taken there
    /// was leased to nobody (lost, or late by `poll.lease`).
    @Test func aPollParkedOnANodeIsAnsweredWhenItsClientPollsAnother() async throws {
        let exchange = "test.chat.\(UUID().uuidString.prefix(8).lowercased())"
        let nodeA = try await WarrenInstance.start(["WARREN_LOG_LEVEL": "debug"], exchange: exchange)
        defer { Task { await nodeA.stop() } }
        let nodeB = try await WarrenInstance.start(exchange: exchange)
        defer { Task { await nodeB.stop() } }
        let hal = uniqueUser("hal")
        let poller = try await Poller.open(port: nodeA.port, user: hal,
                                           subscriptions: #"[{"id":"me","pattern":"\#(mine(hal))","mode":"inbox"}]"#, device: "pk")
        let parked = Task { try await poller.poll(wait: 25, ack: poller.firstCursor) }
        #expect(await nodeA.process.waitForLog("long-poll waiting", timeout: .seconds(20)), "log:\n\(nodeA.process.log)")
        // The client goes on on B (acking the cursor of the last answer it read, the 201's).
        let onB = try await poller.poll(wait: 0, ack: poller.firstCursor, on: nodeB.port)
        #expect(onB.messages.isEmpty)
        // Answered with nothing well before its 25 s, or, without the fix, by the message below.
        let answeredFirst = await withTaskGroup(of: String.self) { group in
            group.addTask { (try? await parked.value).map { $0.messages.isEmpty ? "empty" : "took a message" } ?? "failed" }
            group.addTask {
                try? await Task.sleep(for: .seconds(15))
                _ = try? await poller.publish(#"{"route":"\#(hal).x","body":"later"}"#)
                return "still parked"
            }
            let first = await group.next()!
            group.cancelAll()
            return first
        }
        #expect(answeredFirst == "empty")
        // And A stops consuming the inbox then, not five seconds after its last poll: B, which the
        // client goes on polling (so B does not stop for want of polls), is the queue's only
        // consumer (meanwhile the two would share its deliveries, and A's reach the client after
        // later ones it read on B).
        let keepPollingB = Task {
            var cursor = onB.cursor
            while !Task.isCancelled, let answer = try? await poller.poll(wait: 1, ack: cursor, on: nodeB.port) { cursor = answer.cursor }
        }
        defer { keepPollingB.cancel() }
        #expect(await nodeA.process.waitForLog("the inbox is not consumed here any more", timeout: .seconds(20)),
                "log:\n\(nodeA.process.log)")
        let queue = "warren.inbox.\(hal).pk"
        let consumers = try await Self.queueInfo(queue, "consumers", until: "1")
        #expect(consumers == "1", "consumers of \(queue): \(consumers)")
        _ = try? Broker.ctl("delete_queue", "warren.inbox.\(hal).pk")
    }

    /// A publish whose 202 was lost on the way, retried with its cid on another node (a balancer
    /// without stickiness), is answered there with the first id and published once (docs/protocol.md's
    /// `(from, cid)` rule across nodes: the first node tells the others of each send it
    /// confirmed). Before 2026-11-29 the retry was published again, under a new id.
    @Test func aSendRetriedOnAnotherNodeIsPublishedOnce() async throws {
        let exchange = "test.chat.\(UUID().uuidString.prefix(8).lowercased())"
        let nodeA = try await WarrenInstance.start(exchange: exchange)
        defer { Task { await nodeA.stop() } }
        // Started second: A hears B's first announcement, so A knows of another node at once.
        let nodeB = try await WarrenInstance.start(exchange: exchange)
        defer { Task { await nodeB.stop() } }
        let ann = uniqueUser("ann"), ben = uniqueUser("ben")
        let route = [ann, ben].sorted().joined(separator: ".")
        let inbox = try await Poller.open(port: nodeB.port, user: ben,
                                          subscriptions: #"[{"id":"me","pattern":"\#(mine(ben))","mode":"inbox"}]"#, device: "cid")
        let send = #"{"route":"\#(route)","body":"once","cid":"c1"}"#
        let first = try await HTTPTestClient.request(.POST, port: nodeA.port, "/v1/messages?user=\(ann)", body: send)
        #expect(first.status == 202)
        // A presence change on A is told after the send, on the same channel: once B knows of
        // it, B has heard of the send.
        let room = "room.\(uniqueUser("cid"))"
        let watcher = try await nodeA.socket(ann)
        _ = try await watcher.request(#"{"op":"sub","id":"r","pattern":"\#(room)","presence":true}"#, expect: "subscribed")
        #expect(try await PresenceIntegrationTests.awaitUsers(nodeB, route: room, [ann], asking: ben))
        let retry = try await HTTPTestClient.request(.POST, port: nodeB.port, "/v1/messages?user=\(ann)", body: send)
        #expect(retry.status == 202)
        #expect(retry.json?["id"]?.stringValue == first.json?["id"]?.stringValue, "\(String(describing: retry.json))")
        _ = try await HTTPTestClient.request(.POST, port: nodeB.port, "/v1/messages?user=\(ann)",
                                             body: #"{"route":"\#(route)","body":"sentinel"}"#)
        var bodies: [String] = []
        var cursor = inbox.firstCursor
        for _ in 0..<10 where bodies.last != "sentinel" {
            let answer = try await inbox.poll(wait: 10, ack: cursor)
            cursor = answer.cursor
            bodies += answer.messages.compactMap { $0.env?["body"]?.stringValue }
        }
        #expect(bodies == ["once", "sentinel"])
        await watcher.close()
        _ = try? Broker.ctl("delete_queue", "warren.inbox.\(ben).cid")
    }

    /// A send one node wrote and never confirmed (carol's inbox full under reject-publish: the
    /// broker nacks it; in life the node can also die before its confirm), retried on another
    /// node: what reached bob comes again as the same message, with the first try's id.
    @Test func aSendNotConfirmedOnOneNodeAndRetriedOnAnotherKeepsItsID() async throws {
        let exchange = "test.chat.\(UUID().uuidString.prefix(8).lowercased())"
        let full = ["WARREN_INBOX_MAX_LENGTH": "1", "WARREN_INBOX_OVERFLOW": "reject-publish", "WARREN_INBOX_PREFETCH": "1"]
        let nodeA = try await WarrenInstance.start(full, exchange: exchange)
        defer { Task { await nodeA.stop() } }
        let nodeB = try await WarrenInstance.start(full, exchange: exchange)
        defer { Task { await nodeB.stop() } }
        let ann = uniqueUser("ann"), ben = uniqueUser("ben"), cat = uniqueUser("cat")
        let b = try await Poller.open(port: nodeB.port, user: ben, subscriptions: ##"[{"id":"l","pattern":"#.\##(ben).#","mode":"live"}]"##,
                                      device: "d")
        _ = try await Poller.open(port: nodeA.port, user: cat, subscriptions: ##"[{"id":"i","pattern":"#.\##(cat).#","mode":"inbox"}]"##,
                                  device: "d")
        // cat's inbox filled until the broker refuses a message.
        #expect(try await BrokerTroubleTests.fillUntilRefused(port: nodeA.port, from: ann, route: "\(ann).\(cat)"))
        let send = #"{"route":"\#([ann, ben, cat].sorted().joined(separator: "."))","body":"hi","cid":"c1"}"#
        let first = try await HTTPTestClient.request(.POST, port: nodeA.port, "/v1/messages?user=\(ann)", body: send)
        // A presence change on A, announced after the send was written: once B knows of it, B has
        // heard what A told of the send (both went to B's queue, the announcement first).
        let room = "room.\(uniqueUser("cid"))"
        let watcher = try await nodeA.socket(ann)
        _ = try await watcher.request(#"{"op":"sub","id":"r","pattern":"\#(room)","presence":true}"#, expect: "subscribed")
        #expect(try await PresenceIntegrationTests.awaitUsers(nodeB, route: room, [ann], asking: ben))
        let retry = try await HTTPTestClient.request(.POST, port: nodeB.port, "/v1/messages?user=\(ann)", body: send)
        _ = try await HTTPTestClient.request(.POST, port: nodeB.port, "/v1/messages?user=\(ann)",
                                             body: #"{"route":"\#([ann, ben].sorted().joined(separator: "."))","body":"sentinel"}"#)
        let bodies = try await b.bodiesAndIDs(until: "sentinel")
        #expect(first.status == 503 && retry.status == 503, "\(first.status) \(retry.status)")
        let his = bodies.filter { $0.body == "hi" }
        #expect(his.count == 2 && Set(his.map(\.id)).count == 1, "\(bodies)")
        await watcher.close()
        _ = try? Broker.ctl("delete_queue", "warren.inbox.\(cat).d")
    }

    /// 1,000 long-polls held open on one node, all answered when a message arrives.
    @Test func aThousandConcurrentLongPolls() async throws {
        let warren = try await WarrenInstance.start(["WARREN_LOG_LEVEL": "debug"])
        defer { Task { await warren.stop() } }
        let room = "room.many\(UUID().uuidString.prefix(6).lowercased())"
        var pollers: [Poller] = []
        for i in 0..<1000 {
            pollers.append(try await Poller.open(port: warren.port, user: "p\(i)x\(UUID().uuidString.prefix(4).lowercased())",
                                                 subscriptions: #"[{"id":"room","pattern":"\#(room)"}]"#))
        }
        let before = rss(warren)
        let answered = try await withThrowingTaskGroup(of: Int.self) { group in
            for p in pollers {
                group.addTask { try await p.poll(wait: 25).messages.count }
            }
            // Every poll logs (at debug level) when it starts waiting.
            let waiting = await warren.process.waitForLog("long-poll waiting", times: 1000, timeout: .seconds(120))
            #expect(waiting)
            let during = rss(warren)
            print("1,000 long-polls held: warren RSS \(before / 1024) MiB before, \(during / 1024) MiB while holding")
            let sender = try await warren.socket(uniqueUser("sender"))
            _ = try await sender.request(#"{"op":"pub","route":"\#(room)","body":"everyone"}"#, expect: "puback")
            var total = 0
            for try await n in group { total += n }
            await sender.close()
            return total
        }
        #expect(answered == 1000, "every long-poll got the message")
        print("after: warren RSS \(rss(warren) / 1024) MiB")
    }

    @Test func theEchoBotAnswersAWebSocketClient() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let botName = "bot\(UUID().uuidString.prefix(6).lowercased())"
        let bot = try WarrenProcess.example("warren-echo-bot", [WarrenInstance.brokerURL, warren.exchange, botName])
        defer { bot.terminate() }
        #expect(await bot.waitForLog("echo bot ready"), "\(bot.log)")
        let alice = uniqueUser("alice")
        let s = try await warren.socket(alice)
        try await s.subscribe("me", "#.\(alice).#")
        let route = [alice, botName].sorted().joined(separator: ".")
        _ = try await s.request(#"{"op":"pub","route":"\#(route)","body":"hello bot"}"#, expect: "puback")
        var echo: JSONValue?
        while echo == nil {
            let env = try #require(try await s.next(op: "msg").env)
            if env["from"]?.stringValue == botName { echo = env }
        }
        #expect(echo?["body"] == .string("echo to \(alice): hello bot") && echo?["via"]?.stringValue == "amqp")
        _ = try await s.request(#"{"op":"pub","route":"\#(route)","body":"can I have the bill?"}"#, expect: "puback")
        var bill: JSONValue?
        while bill == nil {
            let env = try #require(try await s.next(op: "msg").env)
            if env["from"]?.stringValue == botName { bill = env }
        }
        #expect(bill?["type"]?.stringValue == "app:bill")
        #expect(bill?["body"]?["ticket"]?.stringValue?.hasPrefix("T-") == true)
        await s.close()
    }
}

/// Resident set size of a Warren process, in KiB.
func rss(_ warren: WarrenInstance) -> Int {
    let status = (try? String(contentsOfFile: "/proc/\(warren.process.process.processIdentifier)/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
}

extension WarrenProcess {
    /// Runs another executable of this package (built next to warren).
    static func example(_ name: String, _ arguments: [String]) throws -> WarrenProcess {
        try WarrenProcess(arguments, executable: binary.deletingLastPathComponent().appendingPathComponent(name))
    }
}
