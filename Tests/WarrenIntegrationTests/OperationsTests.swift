import Foundation
import Testing
import WarrenCore

@Suite("Operations", .serialized)
struct OperationsTests {
    /// `warren check` names the key and the reason for each broken config, and accepts the shipped one.
    @Test(arguments: [
        ("[amqp]\nurl = \"http://broker\"\n", "amqp.url"),
        ("[amqp]\nheartbeat = \"often\"\n", "amqp.heartbeat"),
        ("[amqp]\nprefetch = 0\n", "amqp.prefetch"),
        ("[amqp]\nexchnage = \"chat\"\n", "amqp.exchnage"),
        ("[http]\nlisten = \"everywhere\"\n", "http.listen"),
        ("[auth]\nmode = \"magic\"\n", "auth.mode"),
        ("[auth]\nmode = \"token\"\nsecret = \"short\"\n", "auth.secret"),
        ("[acl]\nsubscribe = [\"#.{user}..#\"]\n", "acl.subscribe"),
        ("[[route]]\nname = \"rooms\"\npattern = \"room..#\"\n", "route.pattern"),
        ("[inbox]\nqueue_type = \"stream\"\n", "inbox.queue_type"),
        ("[limits]\nmax_message_bytes = -5\n", "limits.max_message_bytes"),
        ("[limits]\noutbound_hard_cap_bytes = -1\n", "limits.outbound_hard_cap_bytes"),
        ("[websocket]\nslow_grace = 601\n", "websocket.slow_grace"),
        ("[log]\nlevel = \"loud\"\n", "log.level"),
        ("[nonsense]\na = 1\n", "nonsense"),
        ("[amqp\nurl = 1\n", "(file)"),
    ])
    func checkRejectsBrokenConfigs(config: String, key: String) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("warren-\(UUID().uuidString).toml")
        try config.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let check = try WarrenProcess(["check", "--config", file.path])
        let status = await check.waitForExit()
        #expect(status != 0 && status != nil)
        #expect(check.log.contains(key), "\(check.log)")
    }

    @Test func checkAcceptsTheShippedConfig() async throws {
        let check = try WarrenProcess(["check", "--config", "bridge.toml"])
        #expect(await check.waitForExit() == 0, "\(check.log)")
    }
}


@Suite("Drain", .serialized)
struct DrainTests {
    @Test func sigtermDrainsSocketsPollsAndInboxes() async throws {
        let exchange = "test.chat.\(UUID().uuidString.prefix(8).lowercased())"
        let warren = try await WarrenInstance.start(["WARREN_LOG_LEVEL": "debug"], exchange: exchange)
        let dave = uniqueUser("dave"), alice = uniqueUser("alice")
        let daveSocket = try await warren.socket(dave, device: "phone")
        try await daveSocket.subscribe("in", mine(dave), mode: "inbox")
        var sockets = [daveSocket]
        for i in 0..<99 {
            let s = try await warren.socket("s\(i)x\(UUID().uuidString.prefix(4).lowercased())")
            sockets.append(s)
        }
        let sender = sockets[1]
        _ = sender // the senders below are other sockets; keep all 100 open
        let aliceSocket = try await warren.socket(alice)
        var sent = Set<String>()
        for i in 0..<5 {
            let ack = try await aliceSocket.request(#"{"op":"pub","route":"\#(alice).\#(dave)","body":\#(i)}"#, expect: "puback")
            sent.insert(ack["id"]!.stringValue!)
        }
        for _ in 0..<5 { _ = try await daveSocket.next(op: "msg") }   // delivered, not acked
        await aliceSocket.close()

        var pollers: [Poller] = []
        for i in 0..<20 {
            pollers.append(try await Poller.open(port: warren.port, user: "p\(i)x\(UUID().uuidString.prefix(4).lowercased())",
                                                 subscriptions: #"[{"id":"r","pattern":"room.drain"}]"#))
        }
        let polls = pollers.map { p in Task { try await p.poll(wait: 25) } }
        #expect(await warren.process.waitForLog("long-poll waiting", times: 20))

        let started = ContinuousClock.now
        kill(warren.process.process.processIdentifier, SIGTERM)
        for s in sockets {
            #expect(await s.closeCode() == 1001, "\(s.name)")
        }
        for p in polls {
            let answer = try await p.value
            #expect(answer.messages.isEmpty)
        }
        let status = await warren.process.waitForExit(timeout: .seconds(15))
        #expect(status == 0)
        print("drained and exited in \(ContinuousClock.now - started)")
        #expect(ContinuousClock.now - started < .seconds(10), "within shutdown.grace")

        // The unacked inbox messages go to the next connection, on a new node.
        let next = try await WarrenInstance.start(exchange: exchange)
        defer { Task { await next.stop() } }
        let again = try await next.socket(dave, device: "phone")
        try await again.subscribe("in", mine(dave), mode: "inbox")
        var redelivered = Set<String>()
        while redelivered.count < 5 {
            let f = try await again.next(op: "msg")
            redelivered.insert(f.env!["id"]!.stringValue!)
        }
        #expect(redelivered == sent)
        await again.close()
    }
}

@Suite("Readiness", .serialized)
struct ReadinessTests {
    /// /readyz follows the broker link: 503 while the broker cannot be reached, 200 within
    /// seconds once it can. The outage is made by a proxy in front of the shared test broker
    /// (stopping the real node would disturb the other suites' broker); stopping the real node
    /// with scripts/rabbitmq.sh stop behaves the same (checked by hand, see the README).
    @Test func readinessFollowsTheBrokerLink() async throws {
        let proxy = try await OutageProxy.start(to: 5672)
        let warren = try await WarrenInstance.start([
            "WARREN_AMQP_URL": "amqp://guest:guest@127.0.0.1:\(proxy.port)/%2f",
            "WARREN_AMQP_RECONNECT_MAX_MS": "500",
        ])
        defer { Task { await warren.stop(); await proxy.stop() } }
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/readyz").status == 200)

        proxy.setDown(true)
        #expect(await warren.process.waitForLog("broker link lost", timeout: .seconds(30)))
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/readyz").status == 503)
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/healthz").status == 200, "alive all along")
        // A WebSocket upgrade meanwhile is refused with 503 and the reason (DESIGN §4).
        let refused = try await HTTPTestClient.request(.GET, port: warren.port, "/v1/ws?user=\(uniqueUser("u"))",
                                                       headers: HandshakeTests.upgrade)
        #expect(refused.status == 503 && refused.json?["error"]?["code"]?.stringValue == "unavailable", "\(refused.status) \(refused.body)")

        let back = ContinuousClock.now
        proxy.setDown(false)
        #expect(await warren.process.waitForLog("broker link up", timeout: .seconds(30)))
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/readyz").status == 200)
        print("ready again \(ContinuousClock.now - back) after the broker was reachable")
    }
}
