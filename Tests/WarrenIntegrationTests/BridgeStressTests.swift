import AMQPClient
import Foundation
import NIOCore
import Testing
import WarrenCore

@Suite("Bridge under load and abuse", .serialized)
struct BridgeStressTests {
    /// 200 sockets on one room each receive every one of 500 messages, while the broker
    /// holds a single live queue for the node.
    @Test func liveFanOutToTwoHundredSockets() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let room = "room.lobby\(UUID().uuidString.prefix(6).lowercased())"
        var sockets: [TestSocket] = []
        for i in 0..<200 {
            let s = try await warren.socket("u\(i)x\(UUID().uuidString.prefix(4).lowercased())")
            try await s.subscribe("r", room)
            sockets.append(s)
        }
        let queues = try Broker.ctl("list_queues", "name", "--no-table-headers", "--quiet")
            .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { $0 == "warren.live.\(warren.nodeID)" }
        #expect(queues.count == 1, "one live queue for the node")

        // The publisher is not one of the 200 readers: one reader per socket.
        let publisher = try await warren.socket(uniqueUser("announcer"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for i in 0..<500 {
                    _ = try await publisher.request(#"{"op":"pub","route":"\#(room)","body":\#(i)}"#, expect: "puback")
                }
            }
            for s in sockets {
                group.addTask {
                    var seen = [Int]()
                    while seen.count < 500 {
                        let f = try await s.next(op: "msg", timeout: .seconds(60))
                        seen.append(Int(f.env!["body"]!.intValue!))
                    }
                    #expect(seen == Array(0..<500), "\(s.name) got every message, in order")
                }
            }
            try await group.waitForAll()
        }
        for s in sockets { await s.close() }
        await publisher.close()
    }

    @Test func badInputIsAnsweredAndOthersCarryOn() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let user = uniqueUser("mallory")
        let bystander = try await warren.socket(uniqueUser("bystander"))
        try await bystander.subscribe("r", "room.quiet")
        let s = try await warren.socket(user)

        let cases: [(String, String, String?)] = [
            ("not json at all", "bad_frame", nil),
            (#"{"op":"dance"}"#, "bad_frame", nil),
            (#"{"op":"sub","id":"s1"}"#, "bad_frame", "s1"),
            (#"{"op":"pub","body":"no route","cid":"c1"}"#, "bad_frame", "c1"),
            (#"{"op":"pub","route":"room.#","body":"x","cid":"c2"}"#, "bad_route", "c2"),
            (#"{"op":"pub","route":"\#(String(repeating: "a", count: 300))","body":"x","cid":"c3"}"#, "bad_route", "c3"),
            (#"{"op":"unsub","id":"nope"}"#, "not_found", "nope"),
            (#"{"op":"pub","route":"room.x","body":"\#(String(repeating: "y", count: 70_000))","cid":"c4"}"#, "too_large", "c4"),
        ]
        for (frame, code, ref) in cases {
            let e = try await s.request(frame, expect: "error")
            #expect(e["code"]?.stringValue == code, "\(frame.prefix(60))")
            #expect(e["ref"]?.stringValue == ref, "\(frame.prefix(60))")
        }
        try await s.subscribe("dup", "room.a")
        let conflict = try await s.request(#"{"op":"sub","id":"dup","pattern":"room.b"}"#, expect: "error")
        #expect(conflict["code"]?.stringValue == "conflict")

        // 10,000 subscriptions: the limit answers, the socket lives on.
        var limited = 0
        for i in 0..<10_000 {
            try await s.send(#"{"op":"sub","id":"m\#(i)","pattern":"room.r\#(i)"}"#)
        }
        var subscribed = 1
        while subscribed + limited < 10_001 {
            guard let f = await s.next(timeout: .seconds(60)) else { break }
            if f["op"]?.stringValue == "subscribed" { subscribed += 1 }
            if f["op"]?.stringValue == "error" { limited += 1; #expect(f["code"]?.stringValue == "rate_limited") }
        }
        #expect(subscribed == 100, "the per-connection limit (100) holds")
        // Too many errors in a minute close the socket with 1008 — but only after max_bad_frames (100);
        // this socket has had far more, so it must have been closed.
        #expect(await s.closeCode() == 1008)

        // A 2 MB frame closes its socket with 1009.
        let big = try await warren.socket(uniqueUser("big"))
        try await big.send(#"{"op":"pub","route":"room.x","body":"\#(String(repeating: "z", count: 2 << 20))"}"#)
        #expect(await big.closeCode() == 1009)

        // Binary frames are refused with bad_frame.
        // Everyone else carries on.
        let other = try await warren.socket(uniqueUser("other"))
        _ = try await other.request(#"{"op":"pub","route":"room.quiet","body":"still here"}"#, expect: "puback")
        let delivered = try await bystander.next(op: "msg")
        #expect(delivered.env?["body"] == .string("still here"))
        await other.close()
        await bystander.close()
    }
}

@Suite("Bridge across broker drops", .serialized)
struct BridgeRecoveryTests {
    /// The broker drops Warren's connection while sockets are subscribed: after recovery, live and
    /// inbox subscriptions deliver again without the clients doing anything.
    @Test func subscriptionsSurviveCloseAllConnections() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let alice = uniqueUser("alice"), bob = uniqueUser("bob"), carol = uniqueUser("carol")
        let a = try await warren.socket(alice)
        try await a.subscribe("live", "#.\(alice).#")
        let b = try await warren.socket(bob)
        try await b.subscribe("in", "#.\(bob).#", mode: "inbox")
        let c = try await warren.socket(carol)

        _ = try await c.request(#"{"op":"pub","route":"\#(alice).\#(bob).\#(carol)","body":"before"}"#, expect: "puback")
        #expect(try await a.next(op: "msg").env?["body"] == .string("before"))
        let first = try await b.next(op: "msg")
        try await b.send(#"{"op":"ack","id":"\#(first.env!["id"]!.stringValue!)"}"#)

        try Broker.ctl("close_all_connections", "test: drop warren")
        #expect(await warren.process.waitForLog("broker link up", timeout: .seconds(60)), "log:\n\(warren.process.log)")

        _ = try await c.request(#"{"op":"pub","route":"\#(alice).\#(bob).\#(carol)","body":"after"}"#, expect: "puback")
        #expect(try await a.next(op: "msg").env?["body"] == .string("after"))
        #expect(try await b.next(op: "msg").env?["body"] == .string("after"))
        for s in [a, b, c] { await s.close() }
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
        #expect(await warren.process.waitForLog("broker link up", timeout: .seconds(60)), "log:\n\(warren.process.log)")
        #expect(try liveBindings() == [rooms[0], rooms[1], "#"])
        try await roundTrip("after")
        for s in sockets { await s.close() }
    }
}

@Suite("Token authentication", .serialized)
struct TokenAuthTests {
    static let secret = "integration-test-secret-0123456789abcdef"

    func mint(_ user: String, ttl: String) async throws -> String {
        let p = try WarrenProcess(["token", "--config", "bridge.toml", "--user", user, "--ttl", ttl],
                                  environment: ["WARREN_AUTH_SECRET": Self.secret])
        #expect(await p.waitForExit() == 0, "\(p.log)")
        return p.log.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "\n").last.map(String.init) ?? ""
    }

    @Test func tokensFromTheCLIAuthenticateAndExpireDuringTheSocket() async throws {
        // Trace logging, so a token that reached any log line would show; no leeway, so expiry is prompt.
        let warren = try await WarrenInstance.start(["WARREN_AUTH_MODE": "token", "WARREN_AUTH_SECRET": Self.secret,
                                                     "WARREN_LOG_LEVEL": "trace", "WARREN_AUTH_LEEWAY": "0"])
        defer { Task { await warren.stop() } }
        let alice = uniqueUser("alice")
        let token = try await mint(alice, ttl: "1h")
        let s = try await TestSocket.connect(port: warren.port, query: "token=\(token)", name: alice)
        try await s.subscribe("me", "#.\(alice).#")
        let ack = try await s.request(#"{"op":"pub","route":"\#(alice).bob","body":"signed"}"#, expect: "puback")
        #expect(ack["id"] != nil)
        let env = try await s.next(op: "msg").env
        #expect(env?["from"]?.stringValue == alice)
        await s.close()

        // No token, a bad token, or ?user= in token mode: 401 before any upgrade.
        for query in ["", "token=garbage", "user=\(alice)"] {
            await #expect(throws: (any Error).self) { _ = try await TestSocket.connect(port: warren.port, query: query) }
        }

        // A token that expires while the socket is open closes it with 4401; a poll session made
        // with it answers while the token holds and 401 on the first poll after.
        let short = try await mint(alice, ttl: "2s")
        let doomed = try await TestSocket.connect(port: warren.port, query: "token=\(short)", name: "short")
        let bearer = [("Authorization", "Bearer \(short)")]
        let created = try await HTTPTestClient.request(.POST, port: warren.port, "/v1/poll",
                                                      body: #"{"subscriptions":[{"id":"s","pattern":"\#(mine(alice))"}]}"#, headers: bearer)
        #expect(created.status == 201, "\(created.body)")
        let session = try #require(created.json?["session"]?.stringValue)
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/v1/poll/\(session)?wait=0", headers: bearer).status == 200)
        #expect(await doomed.closeCode(timeout: .seconds(15)) == 4401)
        let late = try await HTTPTestClient.request(.GET, port: warren.port, "/v1/poll/\(session)?wait=0&token=\(short)")
        #expect(late.status == 401 && late.body.contains("token expired"), "\(late.body)")
        // The same session with a fresh token for the same user carries on.
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/v1/poll/\(session)?wait=0&token=\(token)").status == 200)

        // No token, in a URL or a header, reached the log, even at trace level.
        for secret in [token, short, Self.secret] {
            #expect(!warren.process.log.contains(secret))
        }
        #expect(warren.process.log.contains("websocket connected"))
    }
}

@Suite("Slow consumers", .serialized)
struct SlowConsumerTests {
    /// A burst a reading socket can drain does not close it (`websocket.slow_grace`): 64 MB in
    /// a room, 1,280 messages of 50 KB published over AMQP as fast as confirms allow. Both
    /// sockets of the room get every message and still answer; none is closed with 4008.
    @Test func readingSocketsSurviveABurstTheyCanDrain() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let room = "room.burst\(UUID().uuidString.prefix(6).lowercased())"
        let readers = [try await warren.socket(uniqueUser("reader")), try await warren.socket(uniqueUser("reader"))]
        for r in readers { try await r.subscribe("r", room) }
        let amqp = try await AMQPObserver.bound(to: warren.exchange, pattern: "nothing.here")
        defer { Task { await amqp.close() } }
        try await amqp.channel.confirmSelect()
        let body = ByteBuffer(repeating: UInt8(ascii: "x"), count: 50_000)
        var inFlight: [EventLoopFuture<Void>] = []
        for _ in 0..<1280 {
            inFlight.append(try amqp.channel.startPublish(body, exchange: warren.exchange, routingKey: room).futureResult)
            if inFlight.count == 64 { try await inFlight.removeFirst().get() }
        }
        for f in inFlight { try await f.get() }
        for r in readers {
            for _ in 0..<1280 { _ = try await r.next(op: "msg") }
            _ = try await r.request(#"{"op":"ping"}"#, expect: "pong")
        }
        #expect(!warren.process.log.contains("closing a slow consumer"))
    }

    /// A socket that falls behind for less than `websocket.slow_grace` is kept, one that stays
    /// behind longer is closed with 4008. A client stops reading while 100 messages of 50 KB
    /// (5 MB, far over a 64 KiB outbound limit, under a 64 MiB hard cap) are published to its
    /// room, then reads everything: with a grace of 30 s it gets the last message and no close;
    /// with a grace of 0 (the behaviour before the grace) it is closed with 4008.
    @Test(arguments: [30, 0])
    func aSocketBehindForLessThanTheGraceIsKept(grace: Int) async throws {
        let warren = try await WarrenInstance.start(["WARREN_LIMITS_OUTBOUND_BUFFER_BYTES": "65536",
                                                     "WARREN_LIMITS_OUTBOUND_HARD_CAP_BYTES": "67108864",
                                                     "WARREN_WEBSOCKET_SLOW_GRACE": "\(grace)"])
        defer { Task { await warren.stop() } }
        let room = "room.behind\(UUID().uuidString.prefix(6).lowercased())"
        let reader = try await RawWebSocket.connect(port: warren.port, query: "user=\(uniqueUser("behind"))")
        try await reader.sendText(#"{"op":"sub","id":"r","pattern":"\#(room)"}"#)
        _ = try await reader.read(until: { $0.contains("\"subscribed\"") }, timeout: .seconds(20))
        try await reader.reading(false)
        let publisher = try await warren.socket(uniqueUser("talker"))
        let body = String(repeating: "x", count: 50_000)
        for _ in 0..<100 { _ = try await publisher.request(#"{"op":"pub","route":"\#(room)","body":"\#(body)"}"#, expect: "puback") }
        _ = try await publisher.request(#"{"op":"pub","route":"\#(room)","body":"the end"}"#, expect: "puback")
        let seen = try await reader.read(until: { $0.contains("the end") })
        if grace > 0 {
            #expect(seen.close == nil && seen.texts.contains { $0.contains("the end") }, "close \(String(describing: seen.close))")
            #expect(!warren.process.log.contains("closing a slow consumer"))
        } else {
            #expect(seen.close == 4008, "close \(String(describing: seen.close)) after \(seen.texts.count) frames")
        }
        _ = await publisher.close()
    }

    /// A client that never reads fills its bounded outbound buffer and is closed with 4008;
    /// Warren's memory does not grow with it and other sockets carry on.
    @Test func aSocketThatNeverReadsIsClosedWith4008() async throws {
        let warren = try await WarrenInstance.start(["WARREN_LIMITS_OUTBOUND_BUFFER_BYTES": "65536"])
        defer { Task { await warren.stop() } }
        let room = "room.slow\(UUID().uuidString.prefix(6).lowercased())"
        let sleeper = try await RawWebSocket.connect(port: warren.port, query: "user=\(uniqueUser("sleepy"))")
        try await sleeper.sendText(#"{"op":"sub","id":"r","pattern":"\#(room)"}"#)
        let publisher = try await warren.socket(uniqueUser("talker"))
        let watcher = try await warren.socket(uniqueUser("watcher"))
        try await watcher.subscribe("r", room)
        // Give the sleeper's subscription a moment to be acknowledged by reading until the answer… without
        // reading: instead publish until Warren reports the slow consumer (bounded by count).
        let body = String(repeating: "x", count: 8000)
        var sent = 0
        while sent < 5000, !warren.process.log.contains("closing a slow consumer") {
            _ = try await publisher.request(#"{"op":"pub","route":"\#(room)","body":"\#(body)"}"#, expect: "puback")
            sent += 1
        }
        #expect(warren.process.log.contains("closing a slow consumer"), "after \(sent) messages")
        // Now read everything the sleeper was sent: it ends with a close frame carrying 4008.
        let code = try await sleeper.readUntilClose()
        #expect(code == 4008)
        // The watcher got every message.
        for _ in 0..<sent { _ = try await watcher.next(op: "msg") }
        await watcher.close()
        await publisher.close()
    }
}
