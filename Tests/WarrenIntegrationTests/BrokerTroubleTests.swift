import AMQPClient
import Foundation
import TestSupport
import Testing
import WarrenCore

/// Issue 6, item 6: a broker that refuses publishes, and one that ends a consumer.
@Suite("Broker trouble", .serialized)
struct BrokerTroubleTests {
    /// A memory alarm (a watermark far below what the node uses) blocks publishing: Warren
    /// answers publishes `unavailable` at once instead of leaving them hanging, and publishes
    /// again once the alarm clears.
    @Test func aBlockedBrokerTurnsPublishesIntoPromptUnavailableErrors() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let room = "room.blocked\(UUID().uuidString.prefix(6).lowercased())"
        let s = try await warren.socket(uniqueUser("blocked"))
        try await s.subscribe("r", room)
        _ = try await s.request(#"{"op":"pub","route":"\#(room)","body":"before","cid":"b0"}"#, expect: "puback")

        try Broker.ctl("set_vm_memory_high_watermark", "0.00001")
        defer { _ = try? Broker.ctl("set_vm_memory_high_watermark", "0.4") }
        // RabbitMQ blocks a connection when it next publishes: this one waits out the confirm
        // timeout (it is written before Warren knows), and Warren learns of the block.
        try await s.send(#"{"op":"pub","route":"\#(room)","body":"first","cid":"b1"}"#)
        #expect(await warren.process.waitForLog("AMQP broker blocked publishing", timeout: .seconds(30)))
        var answers: [String] = []
        let started = ContinuousClock.now
        for i in 0..<20 {
            let answer = try await s.request(#"{"op":"pub","route":"\#(room)","body":\#(i),"cid":"p\#(i)"}"#, expect: "error")
            answers.append(answer["code"]?.stringValue ?? "?")
        }
        print("blocked broker: 20 publishes refused in \(ContinuousClock.now - started)")
        #expect(answers == Array(repeating: "unavailable", count: 20))
        // b1 was written before Warren knew: it ends in `unavailable` at its confirm timeout (or in
        // a puback, if the broker took it in before the alarm was raised) — never in silence.
        var b1: String?
        var bodies: [JSONValue] = []
        while b1 == nil, let frame = await s.next(timeout: .seconds(30)) {
            if frame["op"]?.stringValue == "msg" { bodies.append(frame["env"]?["body"] ?? .null) }
            if frame["ref"]?.stringValue == "b1" || frame["cid"]?.stringValue == "b1" {
                b1 = frame["code"]?.stringValue ?? frame["op"]?.stringValue
            }
        }
        #expect(b1 == "unavailable" || b1 == "puback", "b1 ended as \(b1 ?? "nothing")")

        _ = try Broker.ctl("set_vm_memory_high_watermark", "0.4")
        let unblocked = await warren.process.waitForLog("AMQP broker unblocked publishing", timeout: .seconds(30))
        #expect(unblocked, "warren log:\n\(warren.process.log)")
        _ = try await s.request(#"{"op":"pub","route":"\#(room)","body":"after","cid":"a0"}"#, expect: "puback")
        // Live delivery goes on: "before", then (maybe "first", delivered once the broker read it) "after".
        while bodies.last != .string("after") { bodies.append(try await s.next(op: "msg").env?["body"] ?? .null) }
        #expect(bodies.first == .string("before") && !bodies.contains(.number("0")))
        _ = await s.close()
    }

    /// The broker refuses a new inbox queue (the vhost's `max-queues` limit, what an operator
    /// sets to bound the queues new device words make): the subscription is answered
    /// `unavailable` with its id, and the socket, the node and the inbox already there carry on.
    @Test func aBrokerRefusingANewInboxQueueIsAnsweredUnavailable() async throws {
        let vhost = "warren-test-limits-\(UUID().uuidString.prefix(6).lowercased())"
        try Broker.ctl("add_vhost", vhost)
        defer { _ = try? Broker.ctl("delete_vhost", vhost) }
        try Broker.ctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")
        let warren = try await WarrenInstance.start(["WARREN_AMQP_URL": "amqp://guest:guest@127.0.0.1:5672/\(vhost)"])
        defer { Task { await warren.stop() } }
        let user = uniqueUser("refused")
        let inbox = ##"{"op":"sub","id":"in","pattern":"#.\##(user).#","mode":"inbox"}"##
        let phone = try await warren.socket(user, device: "phone")
        _ = try await phone.request(inbox, expect: "subscribed")
        // Room for the queues there are, and no more.
        let queues = try Broker.ctl("list_queues", "-p", vhost, "name", "--no-table-headers", "--quiet")
            .split(separator: "\n").filter { !$0.isEmpty }.count
        try Broker.ctl("set_vhost_limits", "-p", vhost, #"{"max-queues": \#(queues)}"#)
        let tablet = try await warren.socket(user, device: "tablet")
        let refused = try await tablet.request(inbox, expect: "error")
        #expect(refused["code"]?.stringValue == "unavailable" && refused["ref"]?.stringValue == "in", "\(refused)")
        // The socket is served, and the phone's inbox gets what the tablet publishes.
        _ = try await tablet.request(#"{"op":"pub","route":"\#(user).bob","body":"still here","cid":"c1"}"#, expect: "puback")
        let got = try await phone.next(op: "msg")
        #expect(got["env"]?["body"]?.stringValue == "still here" && got["sub"]?.stringValue == "in")
        _ = await tablet.close()
        _ = await phone.close()
    }

    /// `[inbox]` changed between two starts (`max_length` here): RabbitMQ refuses to declare the
    /// queues already there with the new arguments (406), which left every such user's inbox
    /// `unavailable`. They are used as they are, on both doors, deliver what was kept while the
    /// user was away, and the node says so once; a new user's inbox gets the new arguments.
    @Test func inboxesDeclaredUnderEarlierSettingsAreStillServed() async throws {
        let user = uniqueUser("kept"), newcomer = uniqueUser("new")
        let inbox = ##"{"op":"sub","id":"in","pattern":"#.\##(user).#","mode":"inbox"}"##
        let first = try await WarrenInstance.start()
        let exchange = first.exchange
        let before = try await first.socket(user, device: "phone")
        _ = try await before.request(inbox, expect: "subscribed")
        _ = await before.close()
        let bob = uniqueUser("bob")
        let sender = try await first.socket(bob, device: "d")
        _ = try await sender.request(#"{"op":"pub","route":"\#(user).\#(bob)","body":"while away","cid":"c1"}"#, expect: "puback")
        _ = await sender.close()
        await first.stop()

        let warren = try await WarrenInstance.start(["WARREN_INBOX_MAX_LENGTH": "20000"], exchange: exchange)
        defer { Task { await warren.stop() } }
        let phone = try await warren.socket(user, device: "phone")
        _ = try await phone.request(inbox, expect: "subscribed")
        let got = try await phone.next(op: "msg")
        #expect(got["env"]?["body"]?.stringValue == "while away", "\(got)")
        _ = await phone.close()
        let poller = try await Poller.open(port: warren.port, user: user,
                                           subscriptions: ##"[{"id":"in","pattern":"#.\##(user).#","mode":"inbox"}]"##, device: "phone")
        _ = try await poller.poll(wait: 0)
        let fresh = try await warren.socket(newcomer, device: "d")
        _ = try await fresh.request(##"{"op":"sub","id":"in","pattern":"#.\##(newcomer).#","mode":"inbox"}"##, expect: "subscribed")
        _ = await fresh.close()
        let arguments = try Broker.ctl("list_queues", "name", "arguments", "--no-table-headers", "--quiet")
            .split(separator: "\n").filter { $0.hasPrefix("warren.inbox.\(newcomer).d") }.joined()
        #expect(arguments.contains("20000"), "\(arguments)")
        #expect(warren.process.log.components(separatedBy: "inbox queues declared under other [inbox] settings").count == 2,
                "said once: \(warren.process.log)")
    }

    /// A quorum inbox is declared with a delivery limit no redelivery reaches (RabbitMQ 4 drops
    /// a message returned 20 times to a quorum queue declared without one); a quorum inbox an
    /// earlier Warren declared without it is used as it is and still delivers.
    @Test func quorumInboxesGetADeliveryLimitAndEarlierOnesAreStillServed() async throws {
        let warren = try await WarrenInstance.start(["WARREN_INBOX_QUEUE_TYPE": "quorum"])
        defer { Task { await warren.stop() } }
        let earlier = uniqueUser("earlier"), newcomer = uniqueUser("new")
        // As Warren declared quorum inboxes before 2026-11-28.
        let connection = try await AMQPConnection.connect(configuration: try AMQPConfiguration(url: WarrenInstance.brokerURL))
        var earlierArguments = InboxSettings().arguments
        earlierArguments["x-queue-type"] = .string("quorum")
        _ = try await connection.openChannel().queueDeclare("warren.inbox.\(earlier).d", durable: true, arguments: earlierArguments)
        await connection.close()
        for user in [earlier, newcomer] {
            let s = try await warren.socket(user, device: "d")
            try await s.subscribe("in", "#.\(user).#", mode: "inbox")
            _ = try await s.request(#"{"op":"pub","route":"\#(user).x","body":"to myself","cid":"c"}"#, expect: "puback")
            let got = try await s.next(op: "msg")
            #expect(got["env"]?["body"]?.stringValue == "to myself", "\(got)")
            _ = await s.close()
        }
        let listed = try Broker.ctl("list_queues", "name", "type", "arguments", "--no-table-headers", "--quiet").split(separator: "\n")
        let fresh = listed.filter { $0.hasPrefix("warren.inbox.\(newcomer).d") }.joined()
        #expect(fresh.contains("quorum") && fresh.contains("x-delivery-limit") && fresh.contains("1000000"), "\(fresh)")
        for user in [earlier, newcomer] { _ = try? Broker.ctl("delete_queue", "warren.inbox.\(user).d") }
    }

    /// An operator deletes a client's inbox queue: the broker cancels the consumer, and Warren
    /// tells the client (`unavailable` with the subscription's id) instead of going quiet;
    /// subscribing again makes a new inbox that delivers.
    @Test func aDeletedInboxIsReportedAndCanBeSubscribedAgain() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let user = uniqueUser("deleted")
        let s = try await warren.socket(user, device: "phone")
        try await s.subscribe("in", "#.\(user).#", mode: "inbox")
        _ = try Broker.ctl("delete_queue", "warren.inbox.\(user).phone")
        let report = try await s.next(op: "error")
        #expect(report["ref"]?.stringValue == "in" && report["code"]?.stringValue == "unavailable", "\(report)")
        try await s.subscribe("in", "#.\(user).#", mode: "inbox")
        _ = try await s.request(#"{"op":"pub","route":"\#(user).x","body":"again"}"#, expect: "puback")
        #expect(try await s.next(op: "msg").env?["body"] == .string("again"))
        _ = await s.close()
    }

    /// A publish routed to a full inbox under `overflow = "reject-publish"` and to another
    /// subscriber is nacked; each retry with its cid reaches the other as the same message (its
    /// first try's id), not as a new message per retry.
    @Test func aRetriedPublishAFullInboxRefusedReachesOthersAsOneMessage() async throws {
        let warren = try await WarrenInstance.start(["WARREN_INBOX_MAX_LENGTH": "1", "WARREN_INBOX_OVERFLOW": "reject-publish",
                                                     "WARREN_INBOX_PREFETCH": "1"])
        defer { Task { await warren.stop() } }
        let alice = uniqueUser("alice"), bob = uniqueUser("bob"), carol = uniqueUser("carol")
        let b = try await Poller.open(port: warren.port, user: bob, subscriptions: ##"[{"id":"l","pattern":"#.\##(bob).#","mode":"live"}]"##,
                                      device: "d")
        _ = try await Poller.open(port: warren.port, user: carol, subscriptions: ##"[{"id":"i","pattern":"#.\##(carol).#","mode":"inbox"}]"##,
                                  device: "d")
        let a = Poller(port: warren.port, user: alice, session: "")
        // carol's inbox filled until the broker refuses a message (one held by the node, at
        // prefetch 1, and one ready make it full).
        #expect(try await Self.fillUntilRefused(port: warren.port, from: alice, route: "\(alice).\(carol)"))
        var answers: [Int] = []
        for _ in 0..<3 {
            let r = try await HTTPTestClient.request(.POST, port: warren.port, "/v1/messages?user=\(alice)",
                                                     body: #"{"route":"\#(alice).\#(bob).\#(carol)","body":"hi","cid":"c1"}"#)
            answers.append(r.status)
        }
        // A sentinel to bob after them: all that came before it has arrived.
        _ = try await a.publish(#"{"route":"\#(alice).\#(bob)","body":"sentinel"}"#)
        let bodies = try await b.bodiesAndIDs(until: "sentinel")
        #expect(answers == [503, 503, 503], "\(answers)")
        let his = bodies.filter { $0.body == "hi" }
        #expect(!his.isEmpty && Set(his.map(\.id)).count == 1, "\(bodies)")
        #expect(bodies.last?.body == "sentinel", "\(bodies)")
    }

    /// Sends to `route` until a publish is refused (503: an inbox full under reject-publish),
    /// at most 5 times; whether one was.
    static func fillUntilRefused(port: Int, from: String, route: String) async throws -> Bool {
        for n in 0..<5 {
            let r = try await HTTPTestClient.request(.POST, port: port, "/v1/messages?user=\(from)",
                                                     body: #"{"route":"\#(route)","body":"fill \#(n)"}"#)
            if r.status == 503 { return true }
        }
        return false
    }

    /// A client holds an inbox delivery and never acks it. With the broker's `consumer_timeout`
    /// shortened to 3 s and one consumption channel for every inbox on the node, RabbitMQ would
    /// close that channel — ending another client's inbox too. Warren hands the delivery back
    /// after `inbox.ack_timeout` (1 s here), so the holder gets it again, marked redelivered,
    /// past the broker's timeout, and the other client's inbox still delivers.
    @Test func aClientThatNeverAcksDoesNotCostOthersTheirInbox() async throws {
        try await Broker.withConsumerTimeout(milliseconds: 3000) {
            let warren = try await WarrenInstance.start(["WARREN_INBOX_ACK_TIMEOUT": "1", "WARREN_AMQP_CONSUMPTION_CHANNELS": "1"])
            defer { Task { await warren.stop() } }
            let (h, o) = try await Self.holderAndOther(on: warren)
            let first = try await h.next(op: "msg")
            // Five copies: the last comes at least 3.75 s after the first, past the broker's 3 s.
            for _ in 0..<4 {
                let again = try await h.next(op: "msg")
                #expect(again.env?["id"] == first.env?["id"] && again["redelivered"] == .bool(true), "\(again)")
            }
            try await Self.expectStillDelivered(o)
            #expect(await warren.process.waitForLog("handed back"))
            _ = await h.close()
            _ = await o.close()
        }
    }

    /// The same client, with the broker's `consumer_timeout` (1 s) below `inbox.ack_timeout`
    /// (300 s, the default): RabbitMQ closes the shared consumption channel. Both inboxes
    /// consume again on a new channel; neither client is told anything; the holder gets its
    /// message again, redelivered, and the other client's inbox still delivers.
    @Test func inboxesOnAChannelTheBrokerClosedConsumeAgain() async throws {
        try await Broker.withConsumerTimeout(milliseconds: 1000) {
            let warren = try await WarrenInstance.start(["WARREN_AMQP_CONSUMPTION_CHANNELS": "1"])
            defer { Task { await warren.stop() } }
            let (h, o) = try await Self.holderAndOther(on: warren)
            let first = try await h.next(op: "msg")
            let again = try #require(await h.next(timeout: .seconds(30)) { $0["op"]?.stringValue == "msg" || $0["op"]?.stringValue == "error" })
            #expect(again["op"]?.stringValue == "msg" && again.env?["id"] == first.env?["id"] && again["redelivered"] == .bool(true),
                    "\(again)")
            #expect(await warren.process.waitForLog("consuming on another"))
            try await h.send(#"{"op":"ack","id":"\#(again.env?["id"]?.stringValue ?? "")"}"#)
            try await Self.expectStillDelivered(o)
            _ = await h.close()
            _ = await o.close()
        }
    }

    /// Two inbox users on `warren`; the first has just published to its own inbox, and holds it.
    static func holderAndOther(on warren: WarrenInstance) async throws -> (holder: TestSocket, other: TestSocket) {
        let holder = uniqueUser("holder"), other = uniqueUser("other")
        let h = try await warren.socket(holder), o = try await warren.socket(other)
        try await h.subscribe("in", "#.\(holder).#", mode: "inbox")
        try await o.subscribe("in", "#.\(other).#", mode: "inbox")
        _ = try await h.request(#"{"op":"pub","route":"\#(holder).x","body":"never acked"}"#, expect: "puback")
        return (h, o)
    }

    /// `other` publishes to its own inbox and gets it: its next frame is that message, not an error.
    static func expectStillDelivered(_ other: TestSocket) async throws {
        _ = try await other.request(#"{"op":"pub","route":"\#(other.name).x","body":"still delivered"}"#, expect: "puback")
        let delivered = try #require(await other.next(timeout: .seconds(30)) { $0["op"]?.stringValue == "msg" || $0["op"]?.stringValue == "error" })
        #expect(delivered.env?["body"] == .string("still delivered"), "\(delivered)")
    }

    /// An operator deletes a node's own queues (live fan-out, presence): the broker cancels
    /// their consumers, and Warren declares, binds and consumes them again instead of going
    /// quiet — a live subscriber gets what is published afterwards, and the node hears another
    /// node's presence again.
    @Test func deletedLiveAndPresenceQueuesAreSetUpAgain() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let other = try await WarrenInstance.start(exchange: warren.exchange)
        defer { Task { await other.stop() } }
        let room = "room.gone\(UUID().uuidString.prefix(6).lowercased())"
        let listener = try await warren.socket(uniqueUser("listener"))
        try await listener.subscribe("r", room)
        let talker = try await warren.socket(uniqueUser("talker"))
        _ = try await talker.request(#"{"op":"pub","route":"\#(room)","body":"before"}"#, expect: "puback")
        #expect(try await listener.next(op: "msg").env?["body"] == .string("before"))

        _ = try Broker.ctl("delete_queue", "warren.live.\(warren.nodeID)")
        _ = try Broker.ctl("delete_queue", "warren.presence.\(warren.nodeID)")
        #expect(await warren.process.waitForLog("the live consumer set up again"))
        #expect(await warren.process.waitForLog("the presence consumer set up again"))
        _ = try await talker.request(#"{"op":"pub","route":"\#(room)","body":"after"}"#, expect: "puback")
        #expect(try await listener.next(op: "msg").env?["body"] == .string("after"), "live delivery resumed")
        // Someone joins on the other node: this node hears of it through its new presence queue.
        let visitor = try await other.socket(uniqueUser("visitor"))
        _ = try await visitor.request(#"{"op":"sub","id":"p","pattern":"\#(room)","presence":true}"#, expect: "subscribed")
        #expect(try await PresenceIntegrationTests.awaitUsers(warren, route: room, [visitor.name], asking: listener.name))
        _ = await visitor.close()
        _ = await listener.close()
        _ = await talker.close()
    }

    /// A node alone: deleting its presence queue takes the presence exchange with it (the
    /// exchange goes with its last binding). Warren declares both again — binding a new queue to
    /// the missing exchange would be refused with a 404 that closes the channel — and a node
    /// started afterwards is heard.
    @Test func aLoneNodesPresenceComesBackAfterItsQueueAndExchangeWent() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        _ = try Broker.ctl("delete_queue", "warren.presence.\(warren.nodeID)")
        #expect(await warren.process.waitForLog("the presence consumer set up again"))
        let other = try await WarrenInstance.start(exchange: warren.exchange)
        defer { Task { await other.stop() } }
        let room = "room.alone\(UUID().uuidString.prefix(6).lowercased())"
        let listener = try await warren.socket(uniqueUser("listener"))
        let visitor = try await other.socket(uniqueUser("visitor"))
        _ = try await visitor.request(#"{"op":"sub","id":"p","pattern":"\#(room)","presence":true}"#, expect: "subscribed")
        #expect(try await PresenceIntegrationTests.awaitUsers(warren, route: room, [visitor.name], asking: listener.name))
        _ = await visitor.close()
        _ = await listener.close()
    }

    /// The broker closes Warren's publishing channel with a channel error (here: a message above
    /// the `max_message_size` the broker had when the channel opened). That publish is answered
    /// `unavailable`; a new channel takes its place and the next publishes go through — one bad
    /// message does not leave the node unable to publish until it restarts.
    @Test func aPublishingChannelClosedByTheBrokerIsReplaced() async throws {
        try Broker.ctl("eval", "application:set_env(rabbit, max_message_size, 2048).")
        let warren: WarrenInstance
        do {
            warren = try await WarrenInstance.start()
        } catch {
            try Broker.ctl("eval", "application:set_env(rabbit, max_message_size, 134217728).")
            throw error
        }
        defer { Task { await warren.stop() } }
        // Channels opened from now on take the default again; Warren's open ones keep 2,048.
        try Broker.ctl("eval", "application:set_env(rabbit, max_message_size, 134217728).")
        let room = "room.big\(UUID().uuidString.prefix(6).lowercased())"
        let s = try await warren.socket(uniqueUser("big"))
        try await s.subscribe("r", room)
        let big = String(repeating: "x", count: 4000)
        try await s.send(#"{"op":"pub","route":"\#(room)","body":"\#(big)","cid":"too-big"}"#)
        let refused = try await s.next(op: "error")
        #expect(refused["code"]?.stringValue == "unavailable" && refused["ref"]?.stringValue == "too-big", "\(refused)")
        #expect(await warren.process.waitForLog("publishing channel replaced"))
        _ = try await s.request(#"{"op":"pub","route":"\#(room)","body":"\#(big)","cid":"again"}"#, expect: "puback")
        #expect(try await s.next(op: "msg").env?["body"]?.stringValue?.count == 4000)
        _ = await s.close()
    }
}
