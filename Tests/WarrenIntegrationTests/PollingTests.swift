import AMQPClient
import Foundation
import NIOCore
import Testing
import WarrenCore

@Suite("HTTP polling", .serialized)
struct PollingTests {
    @Test func pollerSocketAndAMQPClientShareAGroup() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let alice = uniqueUser("alice"), bob = uniqueUser("bob"), carol = uniqueUser("carol")
        let group = [alice, bob, carol].sorted().joined(separator: ".")
        let poller = try await Poller.open(port: warren.port, user: alice, subscriptions: #"[{"id":"me","pattern":"\#(mine(alice))"}]"#)
        let socket = try await warren.socket(bob)
        try await socket.subscribe("me", "#.\(bob).#")
        let amqp = try await AMQPObserver.bound(to: warren.exchange, pattern: "#.\(carol).#")
        defer { Task { await amqp.close() } }

        // The poller speaks.
        let sent = try await poller.publish(#"{"route":"\#(group)","body":"from the poller","cid":"p1"}"#)
        let id1 = try #require(sent["id"]?.stringValue)
        #expect(sent["route"]?.stringValue == group)
        #expect(try await socket.next(op: "msg").env?["id"]?.stringValue == id1)
        let m1 = try #require(await amqp.messages.next(timeout: .seconds(10)))
        #expect(m1.properties.messageID == id1)

        // The socket speaks.
        let ack = try await socket.request(#"{"op":"pub","route":"\#(group)","body":"from the socket","cid":"s1"}"#, expect: "puback")
        let id2 = try #require(ack["id"]?.stringValue)
        var cursor: String?
        var seen: [String] = []
        while !seen.contains(id2) {
            let (messages, c) = try await poller.poll(wait: 5, ack: cursor)
            cursor = c
            seen += messages.compactMap { $0.env?["id"]?.stringValue }
        }
        #expect(try #require(await amqp.messages.next(timeout: .seconds(10))).properties.messageID == id2)

        // The AMQP client speaks; its message_id gives every copy one id.
        let id3 = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e"
        try await amqp.channel.publish("from amqp", exchange: warren.exchange, routingKey: group,
                                       properties: BasicProperties(contentType: "text/plain", messageID: id3, appID: "svc"))
        var atSocket: JSONValue?
        while atSocket == nil {
            let env = try await socket.next(op: "msg").env
            if env?["id"]?.stringValue == id3 { atSocket = env }
        }
        #expect(atSocket?["via"]?.stringValue == "amqp")
        var fromAMQP: JSONValue?
        while fromAMQP == nil {
            let (messages, c) = try await poller.poll(wait: 5, ack: cursor)
            cursor = c
            fromAMQP = messages.first { $0.env?["id"]?.stringValue == id3 }
        }
        #expect(fromAMQP?.env?["via"]?.stringValue == "amqp")
        _ = await amqp.messages.next(timeout: .seconds(5)) // its own copy
        await socket.close()
    }

    @Test(arguments: ["epoll", "nio"]) func longPollWakesOnArrivalAndEndsEmptyAtTheDeadline(door: String) async throws {
        let warren = try await WarrenInstance.start(["WARREN_LOG_LEVEL": "debug", "WARREN_HTTP_POLL_DOOR": door])
        defer { Task { await warren.stop() } }
        let alice = uniqueUser("alice")
        let poller = try await Poller.open(port: warren.port, user: alice, subscriptions: #"[{"id":"me","pattern":"\#(mine(alice))"}]"#)

        let started = ContinuousClock.now
        let (empty, _) = try await poller.poll(wait: 0)
        let immediate = ContinuousClock.now - started
        #expect(empty.isEmpty)
        print("wait=0 answered in \(immediate)")

        let deadlineStart = ContinuousClock.now
        let (none, _) = try await poller.poll(wait: 2)
        let atDeadline = ContinuousClock.now - deadlineStart
        #expect(none.isEmpty)
        #expect(atDeadline >= .seconds(2), "a long-poll holds until its deadline when nothing comes")
        print("wait=2 with nothing answered after \(atDeadline)")

        let bob = uniqueUser("bob")
        let sender = try await warren.socket(bob)
        let held = Task { () -> (Duration, [JSONValue]) in
            let (messages, _) = try await poller.poll(wait: 25)
            return (ContinuousClock.now - deadlineStart, messages)
        }
        // Publish only once the poll is surely waiting (Warren logs it at debug level; the deadline
        // poll above logged it once already).
        #expect(await warren.process.waitForLog("long-poll waiting", times: 2))
        let publishedAt = ContinuousClock.now
        _ = try await sender.request(#"{"op":"pub","route":"\#(alice).\#(bob)","body":"wake up"}"#, expect: "puback")
        let (_, messages) = try await held.value
        let latency = ContinuousClock.now - publishedAt
        #expect(messages.count == 1)
        // That the delivery itself answers a parked poll (rather than its deadline) is checked
        // without a clock in PollBufferTests.aParkedPollIsAnsweredByTheDeliveryItself; here the
        // time is only printed (no timing bounds in tests).
        print("wait=25 answered \(latency) after the publish")
        await sender.close()
    }

    @Test func inboxOverSuccessivePollsWithLeases() async throws {
        let warren = try await WarrenInstance.start(["WARREN_POLL_LEASE": "2"])
        defer { Task { await warren.stop() } }
        let alice = uniqueUser("alice"), bob = uniqueUser("bob")
        let poller = try await Poller.open(port: warren.port, user: bob,
                                           subscriptions: #"[{"id":"in","pattern":"\#(mine(bob))","mode":"inbox"}]"#, device: "phone")
        let sender = try await warren.socket(alice)
        // Pipelined in windows of 200 (below limits.max_pending_publishes).
        for window in stride(from: 0, to: 1000, by: 200) {
            for i in window..<(window + 200) {
                try await sender.send(#"{"op":"pub","route":"\#(alice).\#(bob)","body":\#(i),"cid":"n\#(i)"}"#)
            }
            for _ in 0..<200 { _ = try await sender.next(op: "puback") }
        }

        var got: [Int] = []
        var ids = Set<String>()
        var cursor: String?
        while got.count < 1000 {
            let (messages, c) = try await poller.poll(wait: 1, max: 100, ack: cursor)
            cursor = c
            for m in messages {
                got.append(Int(m.env!["body"]!.intValue!))
                #expect(ids.insert(m.env!["id"]!.stringValue!).inserted, "none twice")
                #expect(m["sub"]?.stringValue == "in")
            }
            if messages.isEmpty { break }
        }
        #expect(got == Array(0..<1000), "all 1,000, in order")
        // Ack the last batch explicitly, then check nothing more comes.
        let ackResponse = try await HTTPTestClient.request(.POST, port: warren.port, "/v1/poll/\(poller.session)/ack?user=\(bob)",
                                                           body: #"{"cursor":"\#(cursor!)"}"#)
        #expect(ackResponse.status == 204)
        #expect(try await poller.poll(wait: 0).messages.isEmpty)

        // An un-acked batch comes back after the lease, marked redelivered.
        _ = try await sender.request(#"{"op":"pub","route":"\#(alice).\#(bob)","body":"lease me"}"#, expect: "puback")
        let first = try await poller.poll(wait: 5)
        #expect(first.messages.count == 1 && first.messages[0]["redelivered"] == nil)
        let again = try await poller.poll(wait: 10)   // no ack: the lease (2 s) runs out
        #expect(again.messages.count == 1)
        #expect(again.messages.first?["redelivered"] == .bool(true))
        #expect(again.messages.first?.env?["id"] == first.messages.first?.env?["id"])
        await sender.close()
    }

    /// A poller polls with the cursor of the last answer it read. An answer it never got (cut on
    /// the way, or a poll its HTTP stack sent again on a new connection) comes again, redelivered,
    /// instead of being acked unseen by the next cursor: before 2026-11-29 it was lost (a soak of
    /// the Swift client lost one now and then). The lease is the default minute: only the poll
    /// brings it back within the test.
    ///
    /// `keepAlive`: every poll on one connection, the same request but for its `ack`, which
    /// Warren takes without parsing it again (`RepeatedPoll`): each poll's own cursor is acked,
    /// not the one of the poll it repeats.
    @Test(arguments: [false, true]) func anAnswerThePollerNeverGotComesAgain(keepAlive: Bool) async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let alice = uniqueUser("alice"), bob = uniqueUser("bob")
        let opened = try await Poller.open(port: warren.port, user: bob,
                                           subscriptions: #"[{"id":"in","pattern":"\#(mine(bob))","mode":"inbox"}]"#)
        let kept = keepAlive ? try await KeepAlivePoller(opened) : nil
        defer { if let kept { Task { await kept.close() } } }
        let poller = (
            firstCursor: opened.firstCursor,
            poll: { (wait: Int, ack: String?) async throws -> (messages: [JSONValue], cursor: String) in
                if let kept { return try await kept.poll(wait: wait, ack: ack) }
                return try await opened.poll(wait: wait, ack: ack)
            }
        )
        let sender = try await warren.socket(alice)
        func send(_ body: String) async throws {
            _ = try await sender.request(#"{"op":"pub","route":"\#(alice).\#(bob)","body":"\#(body)"}"#, expect: "puback")
        }
        func bodies(_ messages: [JSONValue]) -> [String] { messages.compactMap { $0.env?["body"]?.stringValue } }
        // The first answer too: the first poll acks the cursor the session came with.
        let first = try #require(poller.firstCursor, "the 201 carries the session's first cursor")
        try await send("read")
        let unread = try await poller.poll(10, first)
        #expect(bodies(unread.messages) == ["read"])
        let read = try await poller.poll(10, first)
        #expect(bodies(read.messages) == ["read"], "the first answer, never read, comes again")
        #expect(read.messages.first?["redelivered"] == .bool(true))
        try await send("lost")
        let lost = try await poller.poll(10, read.cursor)
        #expect(bodies(lost.messages) == ["lost"])
        // The client never read that answer: it polls again with the cursor of the one it read.
        let again = try await poller.poll(10, read.cursor)
        try await send("sentinel")
        var got = bodies(again.messages)
        var cursor = again.cursor
        while !got.contains("sentinel") {
            let next = try await poller.poll(10, cursor)
            cursor = next.cursor
            if next.messages.isEmpty { break }
            got += bodies(next.messages)
        }
        #expect(got == ["lost", "sentinel"], "the answer never read comes again: \(got)")
        #expect(again.messages.first?["redelivered"] == .bool(true))
        await sender.close()
    }

    static func liveSubscriptions(_ warren: WarrenInstance) async throws -> Int {
        let stats = try await HTTPTestClient.request(.GET, port: warren.port, "/v1/stats").json
        return Int(try #require(stats?["subscriptions"]?["live"]?.intValue))
    }

    /// A node buffers a session's live deliveries between polls, and drops that buffer (and the
    /// session's subscriptions) after `poll.session_ttl` without a poll: what was buffered is
    /// gone, and polling again starts afresh.
    @Test func aLiveBufferIsDroppedAfterTheSessionTTLWithoutAPoll() async throws {
        let warren = try await WarrenInstance.start(["WARREN_POLL_SESSION_TTL": "5"])
        defer { Task { await warren.stop() } }
        let alice = uniqueUser("alice"), bob = uniqueUser("bob")
        let room = "room.ttl\(UUID().uuidString.prefix(6).lowercased())"
        let before = try await Self.liveSubscriptions(warren)
        let poller = try await Poller.open(port: warren.port, user: alice, subscriptions: #"[{"id":"r","pattern":"\#(room)"}]"#)
        #expect(try await Self.liveSubscriptions(warren) == before + 1)
        let sender = try await warren.socket(bob)
        _ = try await sender.request(#"{"op":"pub","route":"\#(room)","body":"buffered","cid":"b1"}"#, expect: "puback")
        // Nobody polls: the session goes once its TTL has passed (the subscription gauge says when).
        var gone = false
        for _ in 0..<300 where !gone {
            try await Task.sleep(for: .milliseconds(100))
            gone = try await Self.liveSubscriptions(warren) == before
        }
        #expect(gone, "the idle session's subscription was dropped")
        // One log line for the session's opening and one for its end, as for a WebSocket.
        #expect(await warren.process.waitForLog("reason=no poll for poll.session_ttl"), "\(warren.process.log)")
        // Polling again opens the session afresh: the buffered message is gone, a new one comes.
        #expect(try await poller.poll(wait: 0).messages.isEmpty)
        _ = try await sender.request(#"{"op":"pub","route":"\#(room)","body":"fresh","cid":"b2"}"#, expect: "puback")
        let (messages, _) = try await poller.poll(wait: 10)
        #expect(messages.map { $0.env?["body"]?.stringValue } == ["fresh"])
        await sender.close()
    }

    /// `DELETE` drops the node's buffer and the session's subscriptions at once.
    @Test func deleteDropsTheBufferAtOnce() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let before = try await Self.liveSubscriptions(warren)
        let (alice, room, poller, sender) = try await Poller.onNewRoom("del", of: warren)
        _ = try await sender.request(#"{"op":"pub","route":"\#(room)","body":"buffered","cid":"d1"}"#, expect: "puback")
        #expect(try await Self.liveSubscriptions(warren) == before + 1)
        #expect(try await HTTPTestClient.request(.DELETE, port: warren.port, "/v1/poll/\(poller.session)?user=\(alice)").status == 204)
        #expect(try await Self.liveSubscriptions(warren) == before, "dropped when the 204 was answered")
        #expect(await warren.process.waitForLog("poll session opened"), "\(warren.process.log)")
        #expect(await warren.process.waitForLog("reason=deleted"), "\(warren.process.log)")
        let r = try await HTTPTestClient.request(.GET, port: warren.port, "/v1/poll/\(poller.session)?user=\(alice)")
        #expect(r.status == 404)
        await sender.close()
    }

    /// A session with no subscriptions, as a WebSocket with none (the clients open with one
    /// before their first subscription, to learn that Warren answers and takes their credentials):
    /// created, polled empty, deleted.
    @Test func aSessionWithNoSubscriptionsIsASession() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let alice = uniqueUser("alice")
        let created = try await HTTPTestClient.request(.POST, port: warren.port, "/v1/poll?user=\(alice)", body: #"{"subscriptions":[]}"#)
        #expect(created.status == 201, "\(created.body)")
        let session = try #require(created.json?["session"]?.stringValue)
        let polled = try await HTTPTestClient.request(.GET, port: warren.port, "/v1/poll/\(session)?user=\(alice)&wait=0")
        #expect(polled.status == 200 && polled.json?["messages"]?.arrayValue?.isEmpty == true, "\(polled.body)")
        #expect(try await HTTPTestClient.request(.DELETE, port: warren.port, "/v1/poll/\(session)?user=\(alice)").status == 204)
        let unauthenticated = try await HTTPTestClient.request(.POST, port: warren.port, "/v1/poll", body: #"{"subscriptions":[]}"#)
        #expect(unauthenticated.status == 401)
    }

    /// Polls of a session open on this node are answered on the event loop, other requests by
    /// the router: a client that pipelines both on one connection gets every answer, in order.
    @Test(arguments: ["epoll", "nio"]) func pipelinedPollsAndOtherRequestsAreAnsweredInOrder(door: String) async throws {
        let warren = try await WarrenInstance.start(["WARREN_HTTP_POLL_DOOR": door])
        defer { Task { await warren.stop() } }
        let (alice, room, poller, sender) = try await Poller.onNewRoom("pipe", of: warren)
        _ = try await sender.request(#"{"op":"pub","route":"\#(room)","body":"first","cid":"p1"}"#, expect: "puback")
        let poll = { (wait: Int, close: Bool) in
            "GET /v1/poll/\(poller.session)?user=\(alice)&wait=\(wait) HTTP/1.1\r\nHost: x\r\n\(close ? "Connection: close\r\n" : "")\r\n"
        }
        let health = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        // poll (has "first") · health · poll (waits 1 s, empty) · health · poll (empty, closes)
        let answer = try await RawHTTP.exchange(port: warren.port, [RawHTTP.bytes(poll(0, false) + health + poll(1, false) + health + poll(0, true))],
                                                timeout: .seconds(20))
        let text = answer.text
        #expect(text.components(separatedBy: "HTTP/1.1 200").count - 1 == 5, "\(text)")
        func position(_ needle: String, after start: String.Index) -> String.Index? {
            text.range(of: needle, range: start..<text.endIndex)?.upperBound
        }
        let first = position("\"first\"", after: text.startIndex)
        let ok1 = first.flatMap { position("ok\n", after: $0) }
        let emptyPoll = ok1.flatMap { position("\"messages\":[]", after: $0) }
        let ok2 = emptyPoll.flatMap { position("ok\n", after: $0) }
        let lastPoll = ok2.flatMap { position("\"messages\":[]", after: $0) }
        #expect(lastPoll != nil, "answers in request order: \(text)")
        await sender.close()
    }

    /// nginx proxies to its upstreams with HTTP/1.0 unless told otherwise: an HTTP/1.0 long-poll
    /// (with or without `Connection: keep-alive`) parks, is woken by a publish, is answered
    /// with the message, and its connection closes.
    @Test(arguments: ["epoll", "nio"]) func anHTTP10LongPollIsWokenAnsweredAndClosed(door: String) async throws {
        let warren = try await WarrenInstance.start(["WARREN_HTTP_IDLE_TIMEOUT": "3600", "WARREN_HTTP_POLL_DOOR": door])
        defer { Task { await warren.stop() } }
        let (alice, room, poller, sender) = try await Poller.onNewRoom("ten", of: warren)
        for (index, connection) in ["", "Connection: keep-alive\r\n"].enumerated() {
            let c = try await RawConnection.open(port: warren.port)
            try await c.send("GET /v1/poll/\(poller.session)?user=\(alice)&wait=20 HTTP/1.0\r\n\(connection)\r\n")
            // Parked: the server's sentinel is the answer that comes only after the publish below.
            _ = try await sender.request(#"{"op":"pub","route":"\#(room)","body":"ten\#(index)","cid":"t\#(index)"}"#, expect: "puback")
            #expect(await c.closedByServer(within: .seconds(30)), "\(c.text)")
            #expect(c.text.hasPrefix("HTTP/1.1 200") && c.text.contains("\"ten\(index)\""), "\(c.text)")
        }
        await sender.close()
    }

    /// A client that sends `Expect: 100-continue` (curl for large bodies, older libcurl from
    /// 1 KB) holds its body back until told: it is told at once (RFC 9110 §10.1.1), not left to
    /// its own timeout (a second, for curl), and a body over the limit is refused before it is sent.
    @Test(arguments: ["epoll", "nio"]) func aClientWaitingFor100ContinueIsToldAtOnce(door: String) async throws {
        let warren = try await WarrenInstance.start(["WARREN_HTTP_POLL_DOOR": door])
        defer { Task { await warren.stop() } }
        let alice = uniqueUser("alice")
        let body = #"{"route":"room.expect","body":"held back"}"#
        let publish = try await RawConnection.open(port: warren.port)
        try await publish.send("POST /v1/messages?user=\(alice) HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n")
        #expect(await publish.received("HTTP/1.1 100 Continue\r\n\r\n", within: .seconds(30)), "\(publish.text)")
        try await publish.send(body)
        #expect(await publish.received("HTTP/1.1 202", within: .seconds(30)), "\(publish.text)")
        await publish.drop()

        // On a connection the router serves (a router endpoint first, as a back end reading
        // history and then publishing would): the publish after it is told too.
        let keptAlive = try await RawConnection.open(port: warren.port)
        try await keptAlive.send("GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(await keptAlive.received("ready", within: .seconds(30)), "\(keptAlive.text)")
        try await keptAlive.send("POST /v1/messages?user=\(alice) HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n")
        #expect(await keptAlive.received("HTTP/1.1 100 Continue\r\n\r\n", within: .seconds(30)), "\(keptAlive.text)")
        try await keptAlive.send(body)
        #expect(await keptAlive.received("HTTP/1.1 202", within: .seconds(30)), "\(keptAlive.text)")
        #expect(keptAlive.text.components(separatedBy: "100 Continue").count == 2, "said once: \(keptAlive.text)")
        await keptAlive.drop()

        let tooLarge = try await RawConnection.open(port: warren.port)
        try await tooLarge.send("POST /v1/poll?user=\(alice) HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: \(8 << 20)\r\n\r\n")
        #expect(await tooLarge.received("\"too_large\"", within: .seconds(30)), "\(tooLarge.text)")
        #expect(tooLarge.text.hasPrefix("HTTP/1.1 413") && !tooLarge.text.contains("100 Continue"), "\(tooLarge.text)")
        #expect(await tooLarge.closedByServer(within: .seconds(30)))
    }

    @Test(arguments: ["epoll", "nio"]) func badHTTPInputGetsTheDocumentedStatus(door: String) async throws {
        let warren = try await WarrenInstance.start(["WARREN_HTTP_POLL_DOOR": door])
        defer { Task { await warren.stop() } }
        let alice = uniqueUser("alice")
        let port = warren.port
        func expectError(_ r: HTTPTestClient.Response, _ status: Int, _ code: String, _ what: String) {
            #expect(r.status == status, "\(what): \(r.status) \(r.body)")
            #expect(r.json?["error"]?["code"]?.stringValue == code, "\(what): \(r.body)")
        }
        expectError(try await HTTPTestClient.request(.POST, port: port, "/v1/messages?user=\(alice)", body: "{not json"), 400, "bad_frame", "malformed JSON")
        expectError(try await HTTPTestClient.request(.GET, port: port, "/v1/poll/nonsense?user=\(alice)"), 404, "not_found", "unknown session")
        let big = String(repeating: "x", count: 2 << 20)
        expectError(try await HTTPTestClient.request(.POST, port: port, "/v1/messages?user=\(alice)", body: #"{"route":"room.x","body":"\#(big)"}"#),
                    413, "too_large", "oversized body")
        expectError(try await HTTPTestClient.request(.POST, port: port, "/v1/messages?user=\(alice)", body: #"{"route":"bob.carol","body":"x"}"#),
                    403, "forbidden", "forbidden route")
        expectError(try await HTTPTestClient.request(.POST, port: port, "/v1/messages?user=\(alice)", body: #"{"route":"a..b"}"#),
                    400, "bad_route", "bad route")
        expectError(try await HTTPTestClient.request(.POST, port: port, "/v1/messages", body: #"{"route":"room.x"}"#),
                    401, "unauthorized", "no user")
        expectError(try await HTTPTestClient.request(.POST, port: port, "/v1/poll?user=\(alice)", body: ##"{"subscriptions":[{"pattern":"#"}]}"##),
                    403, "forbidden", "forbidden subscription")
        let poller = try await Poller.open(port: port, user: alice, subscriptions: #"[{"id":"me","pattern":"\#(mine(alice))"}]"#)
        expectError(try await HTTPTestClient.request(.GET, port: port, "/v1/poll/\(poller.session)?user=\(alice)&wait=-1"), 400, "bad_frame", "wait=-1")
        expectError(try await HTTPTestClient.request(.GET, port: port, "/v1/poll/\(poller.session)?user=\(alice)&wait=soon"), 400, "bad_frame", "wait=soon")
        let clamped = try await HTTPTestClient.request(.GET, port: port, "/v1/poll/\(poller.session)?user=\(alice)&max=1000000")
        #expect(clamped.status == 200, "max above poll.max_batch is clamped")
        // Past what an integer holds is still above the limit: clamped too, not a 400.
        let huge = try await HTTPTestClient.request(.GET, port: port, "/v1/poll/\(poller.session)?user=\(alice)&max=99999999999999999999")
        #expect(huge.status == 200, "\(huge.status) \(huge.body)")
        // Someone else's session is not found.
        expectError(try await HTTPTestClient.request(.GET, port: port, "/v1/poll/\(poller.session)?user=\(uniqueUser("eve"))"), 404, "not_found", "foreign session")
        // Deleting ends the session.
        #expect(try await HTTPTestClient.request(.DELETE, port: port, "/v1/poll/\(poller.session)?user=\(alice)").status == 204)
        expectError(try await HTTPTestClient.request(.GET, port: port, "/v1/poll/\(poller.session)?user=\(alice)"), 404, "not_found", "deleted session")
        // Nothing else was affected.
        #expect(try await HTTPTestClient.request(.GET, port: port, "/readyz").status == 200)
    }

    @Test(arguments: ["epoll", "nio"]) func corsLetsABrowserPageOnAnotherOriginPoll(door: String) async throws {
        // Two origins (a list: hummingbird's own middleware takes one or any).
        let warren = try await WarrenInstance.start(["WARREN_HTTP_CORS_ORIGIN": "https://chat.example, http://localhost:3000",
                                                      "WARREN_HTTP_POLL_DOOR": door])
        defer { Task { await warren.stop() } }
        let second = try await HTTPTestClient.request(.OPTIONS, port: warren.port, "/v1/poll", headers: [
            ("Origin", "http://localhost:3000"), ("Access-Control-Request-Method", "POST"),
        ])
        #expect(second.header("Access-Control-Allow-Origin") == "http://localhost:3000")
        let preflight = try await HTTPTestClient.request(.OPTIONS, port: warren.port, "/v1/messages", headers: [
            ("Origin", "https://chat.example"), ("Access-Control-Request-Method", "POST"),
        ])
        #expect(preflight.header("Access-Control-Allow-Origin") == "https://chat.example")
        let alice = uniqueUser("alice")
        let sent = try await HTTPTestClient.request(.POST, port: warren.port, "/v1/messages?user=\(alice)",
                                                   body: #"{"route":"room.cors","body":"x"}"#, headers: [("Origin", "https://chat.example")])
        #expect(sent.status == 202)
        #expect(sent.header("Access-Control-Allow-Origin") == "https://chat.example")
        let other = try await HTTPTestClient.request(.POST, port: warren.port, "/v1/messages?user=\(alice)",
                                                    body: #"{"route":"room.cors","body":"x"}"#, headers: [("Origin", "https://evil.example")])
        #expect(other.header("Access-Control-Allow-Origin") == nil)
        #expect(other.header("Vary") == "Origin" && sent.header("Vary") == "Origin", "a cache keeps the two apart")
        #expect(other.status == 202, "a request from elsewhere is served, its page only cannot read the answer")
        let otherPreflight = try await HTTPTestClient.request(.OPTIONS, port: warren.port, "/v1/messages", headers: [
            ("Origin", "https://evil.example"), ("Access-Control-Request-Method", "POST"),
        ])
        #expect(otherPreflight.header("Access-Control-Allow-Origin") == nil)
    }
}
