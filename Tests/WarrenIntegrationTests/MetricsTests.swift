import AMQPClient
import Foundation
import NIOCore
import TestSupport
import Testing
import WarrenCore

@Suite("Metrics", .serialized)
struct MetricsTests {
    func scrape(_ warren: WarrenInstance) async throws -> (PrometheusSamples, String) {
        let r = try await HTTPTestClient.request(.GET, port: warren.port, "/metrics")
        #expect(r.status == 200)
        return (PrometheusSamples(r.body), r.body)
    }

    @Test func countersMoveByExactlyWhatWasSentAndDelivered() async throws {
        let warren = try await WarrenInstance.start(["WARREN_LIMITS_OUTBOUND_BUFFER_BYTES": "65536"])
        defer { Task { await warren.stop() } }
        let alice = uniqueUser("alice"), bob = uniqueUser("bob")
        let room = "room.m\(UUID().uuidString.prefix(6).lowercased())"
        let socket = try await warren.socket(alice)
        try await socket.subscribe("room", room)
        let poller = try await Poller.open(port: warren.port, user: bob, subscriptions: #"[{"id":"me","pattern":"\#(mine(bob))"}]"#)
        let amqp = try await AMQPObserver.bound(to: warren.exchange, pattern: "nothing.here")
        defer { Task { await amqp.close() } }
        let (before, _) = try await scrape(warren)

        // ws → rooms: 3 publishes, each delivered back to the socket (live).
        for i in 0..<3 { _ = try await socket.request(#"{"op":"pub","route":"\#(room)","body":\#(i)}"#, expect: "puback") }
        for _ in 0..<3 { _ = try await socket.next(op: "msg") }
        // poll → other (alice.bob): 2 publishes, both polled by bob.
        for i in 0..<2 { _ = try await poller.publish(#"{"route":"\#(alice).\#(bob)","body":\#(i)}"#) }
        var polled = 0
        var cursor: String?
        while polled < 2 {
            let (m, c) = try await poller.poll(wait: 5, ack: cursor)
            polled += m.count
            cursor = c
        }
        _ = try await poller.poll(wait: 0, ack: cursor)
        // amqp → rooms: 1 plain message, delivered to the socket.
        try await amqp.channel.publish("from amqp", exchange: warren.exchange, routingKey: room)
        _ = try await socket.next(op: "msg")
        // a forbidden publish
        _ = try await socket.request(#"{"op":"pub","route":"\#(bob).carol","body":"no"}"#, expect: "error")

        let (after, text) = try await scrape(warren)
        func delta(_ route: String, _ f: String, _ d: String) -> Double { after.messages(route, f, d) - before.messages(route, f, d) }
        #expect(delta("rooms", "ws", "in") == 3)
        #expect(delta("rooms", "ws", "out") == 4)       // 3 own + 1 from amqp
        #expect(delta("rooms", "amqp", "out") == 3)     // confirmed by RabbitMQ
        #expect(delta("rooms", "amqp", "in") == 4)      // consumed from the live queue
        #expect(delta("other", "poll", "in") == 2)
        #expect(delta("other", "poll", "out") == 2)
        #expect(delta("other", "amqp", "out") == 2)
        #expect(delta("other", "amqp", "in") == 2)
        #expect(delta("other", "ws", "in") == 0 && delta("rooms", "poll", "in") == 0)
        let latencyCount = after.value("warren_delivery_latency_seconds_count", [("route", "rooms")])
            - before.value("warren_delivery_latency_seconds_count", [("route", "rooms")])
        #expect(latencyCount == 4, "one latency sample per delivery")
        let confirmCount = after.value("warren_publish_confirm_seconds_count", [("route", "other")])
            - before.value("warren_publish_confirm_seconds_count", [("route", "other")])
        #expect(confirmCount == 2)
        #expect(after.value("warren_dropped_total", [("route", "other"), ("reason", "forbidden")])
            - before.value("warren_dropped_total", [("route", "other"), ("reason", "forbidden")]) == 1)
        #expect(after.value("warren_connections", [("frontend", "ws")]) == 1)
        // The socket's room and the poll session's live subscription: a poll session is a session.
        #expect(after.value("warren_subscriptions", [("mode", "live")]) == 2)
        #expect(after.value("warren_amqp_up", []) == 1 || after.values["warren_amqp_up"] == 1)

        // /v1/stats (what the dashboard draws) says the same, read from the same registry.
        let stats = try #require(try await HTTPTestClient.request(.GET, port: warren.port, "/v1/stats").json)
        for route in ["rooms", "other"] {
            for f in ["ws", "poll", "amqp"] {
                for d in ["in", "out"] {
                    #expect(stats["routes"]?[route]?["messages"]?["\(f)_\(d)"]?.intValue == Int64(after.messages(route, f, d)),
                            "/v1/stats and /metrics agree on \(route) \(f) \(d)")
                }
            }
        }
        #expect(stats["routes"]?["other"]?["dropped"]?["forbidden"]?.intValue
            == Int64(after.value("warren_dropped_total", [("route", "other"), ("reason", "forbidden")])))
        #expect(stats["connections"]?["ws"]?.intValue == 1 && stats["subscriptions"]?["live"]?.intValue == 2)
        // The build: `warren --version`'s, as a series of its own.
        #expect(after.value("warren_build_info", [("version", WarrenVersion.string)]) == 1)
        #expect(stats["version"]?.stringValue == WarrenVersion.string)

        // Only the documented labels (and the build's version on warren_build_info).
        #expect(after.labelNames.isSubset(of: ["route", "frontend", "direction", "reason", "mode", "le", "version"]), "\(after.labelNames)")
        for (key, _) in after.values where key.contains("version=\"") { #expect(key.hasPrefix("warren_build_info"), "\(key)") }
        for (key, _) in after.values where key.contains("route=\"") {
            let route = key.split(separator: "route=\"")[1].split(separator: "\"")[0]
            #expect(["rooms", "groups", "other"].contains(String(route)), "\(key)")
        }
        // A real Prometheus parser accepts it.
        let parsed = try parseWithPython(text)
        #expect(parsed, "prometheus_client.parser rejected the exposition")

        // A slow consumer moves its drop counter.
        let sleeper = try await RawWebSocket.connect(port: warren.port, query: "user=\(uniqueUser("sleepy"))")
        try await sleeper.sendText(#"{"op":"sub","id":"r","pattern":"\#(room)"}"#)
        var sent = 0
        while sent < 5000, !warren.process.log.contains("closing a slow consumer") {
            _ = try await socket.request(#"{"op":"pub","route":"\#(room)","body":"\#(String(repeating: "x", count: 8000))"}"#, expect: "puback")
            sent += 1
        }
        let (final, _) = try await scrape(warren)
        #expect(final.value("warren_dropped_total", [("route", "rooms"), ("reason", "slow_consumer")]) == 1)
        await socket.close()
    }

    @Test func statsAreTheSameFiguresAsJSON() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let r = try await HTTPTestClient.request(.GET, port: warren.port, "/v1/stats")
        #expect(r.status == 200)
        let json = try #require(r.json)
        #expect(json["routes"]?["rooms"]?["messages"]?["ws_in"] != nil)
        #expect(json["amqp"]?["up"] == .bool(true))
        #expect(json["connections"]?["ws"] != nil)
        #expect(json["presence"]?["rooms"]?.intValue == 0, "present users per route class (the dashboard's presence line)")
    }
}

/// Parses the exposition with Python's prometheus_client (Debian's, for the Python that
/// scripts/test.sh names in WARREN_TEST_PYTHON).
func parseWithPython(_ text: String) throws -> Bool {
    let python = ProcessInfo.processInfo.environment["WARREN_TEST_PYTHON"] ?? "python3"
    let child = try ChildProcess(URL(fileURLWithPath: "/usr/bin/env"), [python, "-c", """
        import sys
        from prometheus_client.parser import text_string_to_metric_families
        families = list(text_string_to_metric_families(sys.stdin.read()))
        assert any(f.name == "warren_messages" for f in families), [f.name for f in families]
        """], input: true)
    child.input?.write(Data(text.utf8))
    try child.input?.close()
    let said = child.output?.readDataToEndOfFile() ?? Data()
    child.waitUntilExit()
    if child.terminationStatus != 0 { print("prometheus_client could not parse the exposition: \(String(decoding: said, as: UTF8.self))") }
    return child.terminationStatus == 0
}
