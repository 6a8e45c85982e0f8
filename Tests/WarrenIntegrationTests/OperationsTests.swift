import Foundation
import Testing
import WarrenCore
import TestSupport

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
        ("[http]\nbacklog = 0\n", "http.backlog"),
        ("[http]\ninternal_listen = \"127.0.0.1:8080\"\n", "http.internal_listen"),
        ("[log]\nlevel = \"loud\"\n", "log.level"),
        ("[nonsense]\na = 1\n", "nonsense"),
        ("[amqp\nurl = 1\n", "(file)"),
    ])
    func checkRejectsBrokenConfigs(config: String, key: String) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("warren-\(UUID().uuidString).toml")
        try config.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let check = try WarrenProcess(["check", "--config", file.path])
        // EX_CONFIG, with the reason and no usage text (it is not a usage error).
        #expect(await check.waitForExit() == 78)
        #expect(check.log.contains(key), "\(check.log)")
        #expect(!check.log.contains("Usage:"), "\(check.log)")
    }

    @Test func checkAcceptsTheShippedConfig() async throws {
        let check = try WarrenProcess(["check", "--config", "bridge.toml"])
        #expect(await check.waitForExit() == 0, "\(check.log)")
    }

    /// A variable in a section's namespace that names no key (cors_origin is in [http], not
    /// [poll]) was silently ignored, so the page on another origin could not poll and nothing
    /// said why; it is refused as an unknown key in the file is.
    @Test func aMisspeltVariableIsRefused() async throws {
        let check = try WarrenProcess(["check", "--config", "bridge.toml"], environment: ["WARREN_POLL_CORS_ORIGIN": "https://chat.example.com"])
        #expect(await check.waitForExit() == 78)
        #expect(check.log.contains("WARREN_POLL_CORS_ORIGIN: unknown key"), "\(check.log)")
    }

    /// With no file at all, the embedded defaults: `--config /dev/null` is a device, which
    /// Foundation's string reader refused as "you don't have permission".
    @Test func anEmptyConfigurationFromADeviceIsTheDefaults() async throws {
        let check = try WarrenProcess(["check", "--config", "/dev/null"], environment: ["WARREN_HTTP_LISTEN": "127.0.0.1:8089"])
        #expect(await check.waitForExit() == 0, "\(check.log)")
        #expect(check.log.contains("listen = \"127.0.0.1:8089\""), "\(check.log)")
        let missing = try WarrenProcess(["check", "--config", "/nonexistent/bridge.toml"])
        #expect(await missing.waitForExit() == 78)
        #expect(missing.log.contains("cannot read /nonexistent/bridge.toml: No such file or directory"), "\(missing.log)")
    }

    /// Load balancers and uptime checks probe with HEAD (RFC 9110 asks every server for it):
    /// the read-only endpoints answer it with their head alone, keep-alive framing intact. A
    /// HEAD of a poll is no poll: it takes nothing.
    @Test func readOnlyEndpointsAnswerHEAD() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        for path in ["/healthz", "/readyz", "/metrics", "/v1/stats", "/dashboard", "/warren.js", "/"] {
            let c = try await RawConnection.open(port: warren.port)
            // The GET behind the HEAD shows the HEAD's answer had no body to misframe it.
            try await c.send("HEAD \(path) HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(await c.received("ok\n", within: .seconds(30)), "\(path): \(c.text)")
            let heads = c.text.components(separatedBy: "HTTP/1.1 ").dropFirst()
            #expect(heads.count == 2 && heads.allSatisfy { $0.hasPrefix("200") }, "\(path): \(c.text)")
            await c.drop()
        }
        let alice = uniqueUser("alice")
        let room = "room.head\(UUID().uuidString.prefix(6).lowercased())"
        let poller = try await Poller.open(port: warren.port, user: alice, subscriptions: #"[{"id":"r","pattern":"\#(room)"}]"#)
        let id = try await poller.publish(#"{"route":"\#(room)","body":"kept"}"#)["id"]?.stringValue
        let c = try await RawConnection.open(port: warren.port)
        try await c.send("HEAD /v1/poll/\(poller.session)?user=\(alice)&wait=0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(await c.closedByServer(within: .seconds(30)))
        #expect(!c.text.hasPrefix("HTTP/1.1 200"), "\(c.text)")
        let next = try await poller.poll(wait: 20)
        #expect(next.messages.map { $0["env"]?["id"]?.stringValue } == [id], "\(next.messages)")
    }

    /// An HTTP/1.0 request (Nagios' `check_http`, a health script over `nc`, an HTTP/1.0 load
    /// balancer check: each reads its answer to the connection's end) and `Connection: Close`
    /// in any case are answered, then the connection closes. Hummingbird kept both open until
    /// `http.idle_timeout` (set far beyond the deadline here).
    @Test func http10AndConnectionCloseEndTheirConnection() async throws {
        let warren = try await WarrenInstance.start(["WARREN_HTTP_IDLE_TIMEOUT": "3600"])
        defer { Task { await warren.stop() } }
        let body = #"{"route":"room.ten","body":"hi"}"#
        let requests = [
            "GET /healthz HTTP/1.0\r\n\r\n",
            "GET /metrics HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
            "POST /v1/messages?user=\(uniqueUser("ten")) HTTP/1.0\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)",
            "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: Close\r\n\r\n",
        ]
        for request in requests {
            let c = try await RawConnection.open(port: warren.port)
            try await c.send(request)
            #expect(await c.closedByServer(within: .seconds(30)), "\(request): \(c.text)")
            #expect(c.text.hasPrefix("HTTP/1.1 20"), "\(request): \(c.text)")
        }
    }

    /// With `http.internal_listen`, the operations endpoints (metrics, stats, dashboard) move to
    /// a port of their own, which serves nothing else; the public port keeps the health checks
    /// (load balancers probe it) and the clients' endpoints, and answers the others 404.
    @Test func operationsEndpointsMoveToTheInternalListener() async throws {
        let inside = try freePort()
        let warren = try await WarrenInstance.start(["WARREN_HTTP_INTERNAL_LISTEN": "127.0.0.1:\(inside)"])
        defer { Task { await warren.stop() } }
        for path in ["/metrics", "/v1/stats", "/dashboard"] {
            // Answered as every error of the HTTP doors is (before 2026-11-28, an empty 404).
            let outside = try await HTTPTestClient.request(.GET, port: warren.port, path)
            #expect(outside.status == 404 && outside.body.contains(#""code":"not_found""#), "\(path) on the public port: \(outside.body)")
            #expect(try await HTTPTestClient.request(.GET, port: inside, path).status == 200, "\(path) on the internal port")
        }
        for path in ["/healthz", "/readyz"] {
            #expect(try await HTTPTestClient.request(.GET, port: warren.port, path).status == 200, "\(path) on the public port")
            #expect(try await HTTPTestClient.request(.GET, port: inside, path).status == 200, "\(path) on the internal port")
        }
        // The clients' endpoints are the public port's alone.
        let alice = uniqueUser("ops")
        let body = #"{"route":"room.inside","body":"counted"}"#
        #expect(try await HTTPTestClient.request(.POST, port: inside, "/v1/messages?user=\(alice)", body: body).status == 404)
        let ws = try await HTTPTestClient.request(.GET, port: inside, "/v1/ws?user=\(alice)")
        #expect(ws.status == 404 && ws.body.contains(#""code":"not_found""#), "\(ws.body)")
        #expect(try await HTTPTestClient.request(.POST, port: warren.port, "/v1/messages?user=\(alice)", body: body).status == 202)
        // What the public port did shows on the internal one.
        let metrics = try await HTTPTestClient.request(.GET, port: inside, "/metrics").body
        #expect(metrics.contains("warren_messages_total{") && metrics.contains("frontend=\"poll\""), "\(metrics)")
        // The same hostile-HTTP handling: an HTTP/1.0 request ends its connection.
        let c = try await RawConnection.open(port: inside)
        try await c.send("GET /metrics HTTP/1.0\r\n\r\n")
        #expect(await c.closedByServer(within: .seconds(30)), "\(c.text)")
        #expect(c.text.hasPrefix("HTTP/1.1 200"), "\(c.text)")
    }

    /// SIGHUP (a reload to most daemons, or a terminal hanging up) is noted and ignored: the
    /// node serves on, its sockets open. Its default action ended Warren at once, with no drain.
    @Test func aHangUpSignalIsIgnored() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let alice = uniqueUser("hup")
        let socket = try await warren.socket(alice)
        try await socket.subscribe("r", "room.hup")
        warren.process.process.signal(SIGHUP)
        #expect(await warren.process.waitForLog("SIGHUP ignored"), "\(warren.process.log)")
        _ = try await socket.request(#"{"op":"pub","route":"room.hup","body":"still here","cid":"h1"}"#, expect: "puback")
        #expect(try await socket.next(op: "msg")["env"]?["body"]?.stringValue == "still here")
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/readyz").status == 200)
    }

    /// An operator looking at RabbitMQ (management UI, `rabbitmqctl list_connections`) sees which
    /// node each connection is from, and which of its pool; every one was named "warren".
    @Test func brokerConnectionsAreNamedAfterTheirNode() async throws {
        let node = "ops" + UUID().uuidString.prefix(8).lowercased()
        let warren = try await WarrenInstance.start(["WARREN_NODE_ID": node, "WARREN_AMQP_CONNECTIONS": "2"])
        defer { Task { await warren.stop() } }
        let listed = try TestEnvironment.rabbitmqctl(["list_connections", "client_properties"])
        #expect(listed.contains("\"warren \(node) 1/2\"") && listed.contains("\"warren \(node) 2/2\""), "\(listed)")
    }

    /// `warren token` without a key to sign with is a configuration error too: EX_CONFIG and
    /// the reason, no usage text.
    @Test func tokenWithoutAKeyIsAConfigurationError() async throws {
        let token = try WarrenProcess(["token", "--config", "bridge.toml", "--user", "alice"],
                                      environment: ["WARREN_AUTH_MODE": "none", "WARREN_AUTH_SECRET": ""])
        #expect(await token.waitForExit() == 78)
        #expect(token.log.contains("cannot sign tokens"), "\(token.log)")
        #expect(!token.log.contains("Usage:"), "\(token.log)")
    }

    /// A bad `--user` or `--ttl` is a usage error of `warren token` (EX_USAGE, its own usage
    /// line), not the root command's.
    @Test(arguments: [["--user", "al ice"], ["--user", "alice", "--ttl", "1.5h"]])
    func tokenArgumentsAreItsUsageErrors(arguments: [String]) async throws {
        let token = try WarrenProcess(["token", "--config", "bridge.toml"] + arguments,
                                      environment: ["WARREN_AUTH_MODE": "token", "WARREN_AUTH_SECRET": String(repeating: "k", count: 32)])
        #expect(await token.waitForExit() == 64)
        #expect(token.log.contains("Usage: warren token"), "\(token.log)")
    }

    /// `warren chat` refuses a `--to`, `--user` or `--device` Warren would refuse, before it
    /// connects (it connected, then said "not sent (bad_route …)" at every line typed).
    @Test(arguments: [["--to", "a..b"], ["--to", "bob", "--user", "x y"], ["--to", "bob", "--device", "a.b"]])
    func chatArgumentsAreItsUsageErrors(arguments: [String]) async throws {
        let chat = try WarrenProcess(["chat", "--user", "alice", "--url", "http://127.0.0.1:1"] + arguments)
        #expect(await chat.waitForExit() == 64)
        #expect(chat.log.contains("Usage: warren chat") && !chat.log.contains("connect"), "\(chat.log)")
    }
}
