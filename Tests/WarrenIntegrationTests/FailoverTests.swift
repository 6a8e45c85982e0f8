import Foundation
import Testing

/// `amqp.url` as a list: a node whose broker goes away fails over to the next one in the list,
/// restoring its live queue, bindings and consumers there, and its sockets keep receiving
/// without doing anything. Two proxies stand in for two nodes of one cluster (both lead to the
/// local broker, so what one node published is on "the other").
@Suite("Broker failover", .serialized)
struct FailoverTests {
    @Test func aLostBrokerFailsOverToTheNextAndSocketsKeepReceiving() async throws {
        let first = try await OutageProxy.start(to: 5672)
        let second = try await OutageProxy.start(to: 5672)
        let warren = try await WarrenInstance.start([
            "WARREN_AMQP_URL": "amqp://guest:guest@127.0.0.1:\(first.port)/%2f,amqp://guest:guest@127.0.0.1:\(second.port)/%2f",
            "WARREN_AMQP_RECONNECT_MAX_MS": "500",
        ])
        defer { Task { await warren.stop(); await first.stop(); await second.stop() } }
        // The AMQP client logs the broker it connected to (`broker=host:port`; the link's own
        // lines name the whole list as URLs).
        #expect(warren.process.log.contains("broker=127.0.0.1:\(first.port)"), "connected to the first broker of the list")
        let room = "room.failover\(UUID().uuidString.prefix(6).lowercased())"
        let listener = try await warren.socket(uniqueUser("listener"))
        try await listener.subscribe("r", room)
        let talker = try await warren.socket(uniqueUser("talker"))
        _ = try await talker.request(#"{"op":"pub","route":"\#(room)","body":"before"}"#, expect: "puback")
        #expect(try await listener.next(op: "msg")["env"]?["body"]?.stringValue == "before")

        first.setDown(true)
        #expect(await warren.process.waitForLog("broker link lost", timeout: .seconds(30)))
        #expect(await warren.process.waitForLog("broker=127.0.0.1:\(second.port)", timeout: .seconds(30)), "failed over to the second")
        var ready = false
        for _ in 0..<200 where !ready {
            ready = try await HTTPTestClient.request(.GET, port: warren.port, "/readyz").status == 200
            if !ready { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(ready, "ready again on the second broker")
        // The same sockets, untouched by the client: a publish is confirmed and delivered.
        _ = try await talker.request(#"{"op":"pub","route":"\#(room)","body":"after"}"#, expect: "puback")
        var bodies: [String] = []
        while bodies.last != "after", let f = try? await listener.next(op: "msg") { bodies.append(f["env"]?["body"]?.stringValue ?? "") }
        #expect(bodies.last == "after")
    }
}
