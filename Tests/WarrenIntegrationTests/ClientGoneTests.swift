import Foundation
import Testing
import WarrenCore

/// Clients go without a word: a tab killed, a phone off the network, a poller that gave up.
/// Their TCP connection ends with the client closing its side, and Warren must end its side
/// too — not hold the descriptor in CLOSE_WAIT until a timeout, and not hand a parked poll's
/// messages to a socket nobody reads. Each test sets the timeouts that would otherwise end
/// the connection (head, idle, ping, wait) far beyond its own deadline, so only the client's
/// close can end it in time.
@Suite("Clients that go", .serialized)
struct ClientGoneTests {
    static let longTimeouts = ["WARREN_HTTP_HEAD_TIMEOUT": "300", "WARREN_HTTP_IDLE_TIMEOUT": "3600",
                               "WARREN_WEBSOCKET_PING_INTERVAL": "3600", "WARREN_WEBSOCKET_IDLE_TIMEOUT": "7200"]
    static let deadline = Duration.seconds(30)

    static func connections(_ warren: WarrenInstance, _ frontend: String) async throws -> Double {
        let r = try await HTTPTestClient.request(.GET, port: warren.port, "/metrics")
        return PrometheusSamples(r.body).value("warren_connections", [("frontend", frontend)])
    }

    /// Waits until `warren_connections{frontend}` reads `count`; false at the deadline.
    static func connections(_ warren: WarrenInstance, _ frontend: String, become count: Double) async throws -> Bool {
        let end = ContinuousClock.now + deadline
        while ContinuousClock.now < end {
            if try await connections(warren, frontend) == count { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// A client that closes its side is answered what it asked before, then the connection closes.
    @Test func aConnectionWhoseClientClosedItsSideIsClosed() async throws {
        let warren = try await WarrenInstance.start(Self.longTimeouts)
        defer { Task { await warren.stop() } }
        let user = uniqueUser("gone")
        let poller = try await Poller.open(port: warren.port, user: user, subscriptions: #"[{"id":"r","pattern":"room.gone"}]"#)

        // Before any request.
        let silent = try await RawConnection.open(port: warren.port)
        try await silent.closeOutput()
        #expect(await silent.closedByServer(within: Self.deadline), "a connection that never asked anything")

        // Between keep-alive requests.
        let idle = try await RawConnection.open(port: warren.port)
        try await idle.send("GET /v1/poll/\(poller.session)?user=\(user)&wait=0 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(await idle.received("\"cursor\"", within: Self.deadline) && idle.text.hasPrefix("HTTP/1.1 200"), "\(idle.text)")
        try await idle.closeOutput()
        #expect(await idle.closedByServer(within: Self.deadline), "an idle keep-alive connection")

        // Right after a request, before its answer: answered, then closed.
        let hasty = try await RawConnection.open(port: warren.port)
        try await hasty.send("GET /v1/poll/\(poller.session)?user=\(user)&wait=0 HTTP/1.1\r\nHost: x\r\n\r\n")
        try await hasty.closeOutput()
        #expect(await hasty.closedByServer(within: Self.deadline), "a connection closed right after its request")
        #expect(hasty.text.hasPrefix("HTTP/1.1 200") && hasty.text.contains("\"cursor\""), "\(hasty.text)")
    }

    /// A long-poll whose client went is over: what is published next waits for the session's
    /// next poll instead of going out in an answer to nobody.
    @Test func aParkedPollWhoseClientWentTakesNothingWithIt() async throws {
        let warren = try await WarrenInstance.start(Self.longTimeouts)
        defer { Task { await warren.stop() } }
        let user = uniqueUser("gone")
        let room = "room.gone\(UUID().uuidString.prefix(6).lowercased())"
        let poller = try await Poller.open(port: warren.port, user: user, subscriptions: #"[{"id":"r","pattern":"\#(room)"}]"#)

        let parked = try await RawConnection.open(port: warren.port)
        try await parked.send("GET /v1/poll/\(poller.session)?user=\(user)&wait=30 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await Self.connections(warren, "poll", become: 1), "the poll is parked")
        await parked.drop()
        #expect(try await Self.connections(warren, "poll", become: 0), "the parked poll ended with its connection")

        let id = try await poller.publish(#"{"route":"\#(room)","body":"after"}"#)["id"]?.stringValue
        let next = try await poller.poll(wait: 20)
        #expect(next.messages.map { $0["env"]?["id"]?.stringValue } == [id], "\(next.messages)")
    }

    /// A WebSocket whose client dropped TCP without a close frame ends at once, not at the next
    /// unanswered ping.
    @Test func aSocketWhoseClientDroppedTheConnectionEnds() async throws {
        let warren = try await WarrenInstance.start(Self.longTimeouts)
        defer { Task { await warren.stop() } }
        // Everything Warren sent is read before the close, so the client's kernel ends the
        // connection with a FIN (unread data would make it a reset, which Warren always noticed).
        let socket = try await RawConnection.open(port: warren.port)
        try await socket.send("GET /v1/ws?user=\(uniqueUser("gone")) HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        #expect(await socket.received("\r\n\r\n", within: Self.deadline) && socket.text.hasPrefix("HTTP/1.1 101"), "\(socket.text)")
        #expect(try await Self.connections(warren, "ws", become: 1), "the socket is open")
        await socket.drop()
        #expect(try await Self.connections(warren, "ws", become: 0), "the socket ended with its connection")
    }

    /// At its descriptor limit, Warren stops accepting for a moment instead of retrying at once
    /// (the listening socket stays readable, and the loop would spin at full CPU), says so in
    /// its log, and accepts again once descriptors are free.
    @Test func acceptingPausesAtTheDescriptorLimit() async throws {
        let warren = try await WarrenInstance.start(Self.longTimeouts, openFiles: 96)
        defer { Task { await warren.stop() } }
        var held: [RawConnection] = []
        for _ in 0..<120 { held.append(try await RawConnection.open(port: warren.port)) }
        #expect(await warren.process.waitForLog("cannot accept a connection", timeout: Self.deadline))

        // Held at the limit for a while: a loop that retried at once would fail thousands of
        // accepts a second (counted below, when accepting works again), one that pauses two.
        try await Task.sleep(for: .seconds(2))

        for connection in held { await connection.drop() }
        let end = ContinuousClock.now + Self.deadline
        var ready = false
        while !ready, ContinuousClock.now < end {
            ready = (try? await HTTPTestClient.request(.GET, port: warren.port, "/readyz").status) == 200
            if !ready { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(ready, "accepting again once descriptors came free")
        #expect(await warren.process.waitForLog("accepting connections again", timeout: Self.deadline))
        #expect(warren.process.log.components(separatedBy: "cannot accept a connection").count == 2, "one line per spell at the limit")
        // A count of attempts, not a clock: it would take the spell 50 s of pauses to reach 100.
        let failed = warren.process.log.components(separatedBy: "failedAccepts=").dropFirst().first
            .flatMap { Int($0.prefix { $0.isNumber }) }
        #expect(failed.map { $0 >= 1 && $0 <= 100 } == true, "failed accepts in the spell: \(failed.map(String.init) ?? "none logged")")
    }
}
