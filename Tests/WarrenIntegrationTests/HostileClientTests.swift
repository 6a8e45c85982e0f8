import Foundation
import NIOCore
import Testing

/// The HTTP edge against clients that mean harm, on both of the public listener's drivers
/// (`http.poll_door`): each probe gets its documented answer or close, no client stalls
/// another or makes Warren hold more than its bounds, and a fresh poll is served afterwards.
/// No timing bounds: a stalled loop shows as a request on another connection not answered
/// while the hostile one is unread; a dodged timeout as a connection left open.
@Suite("Hostile clients at the HTTP edge", .serialized)
struct HostileClientTests {
    static let doors = ["epoll", "nio"]

    static func start(_ door: String, _ extra: [String: String] = [:]) async throws -> WarrenInstance {
        var env = ["WARREN_HTTP_POLL_DOOR": door]
        for (k, v) in extra { env[k] = v }
        let warren = try await WarrenInstance.start(env)
        let line = warren.process.log.split(separator: "\n").first { $0.contains("HTTP server listening") } ?? ""
        #expect(line.contains("epoll") == (door == "epoll"), "\(line)")
        return warren
    }

    /// A poller on a new room, and proof that polling works now.
    static func freshPollWorks(_ warren: WarrenInstance) async throws {
        let (_, _, poller, sender) = try await Poller.onNewRoom("fresh", of: warren)
        _ = try await poller.poll()
        await sender.close()
    }

    /// Probe: 100,000 pipelined polls from a client with a 4 KB receive buffer that reads
    /// nothing. Warren stops reading it once its answers back up (the client cannot send them
    /// all), other connections — on every loop — are answered meanwhile, Warren's memory
    /// stays put, and once the client reads, every answer comes, in order, then the last
    /// request's close.
    @Test(arguments: doors)
    func aClientThatReadsNothingStallsNoOneAndHoldsABoundedOutput(door: String) async throws {
        let warren = try await Self.start(door, ["WARREN_HTTP_MAX_PENDING_OUTPUT": "65536", "WARREN_HTTP_IDLE_TIMEOUT": "3600"])
        defer { Task { await warren.stop() } }
        let (alice, _, poller, sender) = try await Poller.onNewRoom("greedy", of: warren)
        let poll = "GET /v1/poll/\(poller.session)?user=\(alice)&wait=0 HTTP/1.1\r\nHost: x\r\n\r\n"
        let count = 100_000
        var requests = [UInt8]()
        requests.reserveCapacity(poll.utf8.count * count + 64)
        for _ in 0..<count { requests += Array(poll.utf8) }
        requests += Array("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8)
        let before = HostileHTTPTests.rss(warren)
        let greedy = try PipeliningClient(port: warren.port, requests: requests)
        let allSent = greedy.sendUntilStuck()
        #expect(!allSent, "Warren read all \(greedy.total) bytes of a client that reads nothing")
        // The sentinel: other connections, whichever loop they land on, are answered now.
        for _ in 0..<4 { #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/healthz").status == 200) }
        let held = HostileHTTPTests.rss(warren) - before
        print("\(door): a non-reading client sent \(greedy.sent) of \(greedy.total) bytes; Warren's RSS grew \(held) KiB")
        #expect(held < 16 * 1024, "Warren holds \(held) KiB for a client that reads nothing")
        let answered = try greedy.readAll(counting: "HTTP/1.1 200 OK\r\n")
        #expect(answered == count + 1, "every poll answered, then /healthz")
        try await Self.freshPollWorks(warren)
        await sender.close()
    }

    /// Probes: a connection that starts with blank lines, and one whose second head never
    /// ends, are closed at `http.head_timeout` (not left open until the idle timeout).
    @Test(arguments: doors)
    func everyHeadHasTheHeadTimeout(door: String) async throws {
        let warren = try await Self.start(door, ["WARREN_HTTP_HEAD_TIMEOUT": "2", "WARREN_HTTP_IDLE_TIMEOUT": "3600"])
        defer { Task { await warren.stop() } }
        let blank = try await RawHTTP.exchange(port: warren.port, [RawHTTP.bytes("\r\n\r\n")], timeout: .seconds(60))
        #expect(blank.closedByServer && blank.text.isEmpty, "blank lines: \(blank.text)")
        let second = try await RawHTTP.exchange(port: warren.port, [RawHTTP.bytes("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHo")],
                                                timeout: .seconds(60))
        #expect(second.closedByServer, "a second head left unfinished")
        #expect(second.text.components(separatedBy: "HTTP/1.1 200 OK").count == 2, "\(second.text)")
        try await Self.freshPollWorks(warren)
    }

    /// Probes answered as RFC 9112 and RFC 6455 ask, each then closed; a poll still works.
    @Test(arguments: doors)
    func requestsHTTPRefusesGetTheirStatus(door: String) async throws {
        let warren = try await Self.start(door)
        defer { Task { await warren.stop() } }
        let handshake = "GET /v1/ws?user=mallory HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        let cases: [(String, String, Int, String?)] = [
            ("no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, nil),
            ("two Hosts", "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, nil),
            ("a chunk size that overflows", "POST /v1/messages?user=mallory HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "ffffffffffffffff\r\n", 400, nil),
            ("a chunk over http.max_body", "POST /v1/messages?user=mallory HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "fffffff\r\n", 413, nil),
            ("a WebSocket key of 3 bytes", handshake + "Sec-WebSocket-Key: abc\r\nSec-WebSocket-Version: 13\r\n\r\n", 400, nil),
            ("a WebSocket version 8", handshake + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n\r\n",
             426, "sec-websocket-version: 13"),
            // The smuggling forms, refused before anything is framed two ways.
            ("Content-Length and chunked", "POST /v1/messages?user=mallory HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, nil),
            ("two Content-Lengths", "POST /v1/messages?user=mallory HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400, nil),
            ("bare LF", "GET /healthz HTTP/1.1\nHost: x\n\n", 400, nil),
            ("bare CR", "GET /healthz HTTP/1.1\rHost: x\r\n\r\n", 400, nil),
            ("a folded line", "GET /healthz HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n", 400, nil),
        ]
        for (name, text, status, header) in cases {
            let answer = try await RawHTTP.exchange(port: warren.port, [RawHTTP.bytes(text)], timeout: .seconds(30))
            #expect(answer.status == status, "\(name): \(answer.text.prefix(300))")
            #expect(answer.closedByServer, "\(name): left open")
            if let header { #expect(answer.text.lowercased().contains(header + "\r\n"), "\(name): \(answer.text.prefix(300))") }
        }
        try await Self.freshPollWorks(warren)
    }

    /// A request inside a body is the body's bytes, never a request of its own.
    @Test(arguments: doors)
    func aRequestInsideABodyIsNotServed(door: String) async throws {
        let warren = try await Self.start(door)
        defer { Task { await warren.stop() } }
        let inner = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        let text = "POST /v1/messages?user=mallory HTTP/1.1\r\nHost: x\r\nContent-Length: \(inner.utf8.count)\r\n\r\n\(inner)"
            + "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        let answer = try await RawHTTP.exchange(port: warren.port, [RawHTTP.bytes(text)], timeout: .seconds(30))
        let statuses = answer.text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { String($0.prefix(3)) }
        #expect(statuses == ["400", "200"], "the body refused as JSON, then /readyz: \(answer.text)")
        #expect(!answer.text.contains("ok\n"), "the request in the body was not answered")
    }

    /// Probe: clients each holding a body one byte short of `http.max_body` pinned one body
    /// each until their timeout; past `http.max_body_bytes_in_flight` they are answered 503.
    @Test(arguments: doors)
    func bodiesPastTheProcessBudgetAre503(door: String) async throws {
        let warren = try await Self.start(door, ["WARREN_HTTP_MAX_BODY_BYTES_IN_FLIGHT": "\(4 << 20)", "WARREN_HTTP_IDLE_TIMEOUT": "3600"])
        defer { Task { await warren.stop() } }
        let head = "POST /v1/messages?user=mallory HTTP/1.1\r\nHost: x\r\nContent-Length: \(1 << 20)\r\n\r\n"
        let body = String(repeating: "x", count: (1 << 20) - 1)
        var holders: [RawConnection] = []
        for _ in 0..<8 {
            let c = try await RawConnection.open(port: warren.port)
            try await c.send(head + body)
            holders.append(c)
        }
        // At most four bodies fit in 4 MB: the others are refused, and closed.
        func refused() -> Int { holders.filter { $0.text.hasPrefix("HTTP/1.1 503 ") }.count }
        let end = ContinuousClock.now + .seconds(60)
        while refused() < 4, ContinuousClock.now < end { try await Task.sleep(for: .milliseconds(20)) }
        #expect(refused() >= 4, "\(refused()) of 8 refused")
        // The bodies that fit get their last byte: each is read whole and answered (not JSON: 400).
        for c in holders where !c.text.hasPrefix("HTTP/1.1 503 ") { try await c.send("x") }
        for c in holders {
            #expect(await c.received("\r\n\r\n{", within: .seconds(30)), "every connection answered: \(c.text.prefix(200))")
            let status = String(c.text.dropFirst(9).prefix(3))
            #expect(status == "503" || status == "400", "\(c.text.prefix(200))")
            if status == "503" { #expect(c.text.contains(#""code":"unavailable""#) && c.text.contains("connection: close")) }
        }
        #expect(refused() < 8, "some bodies fit")
        try await Self.freshPollWorks(warren)
        for c in holders { await c.drop() }
    }
}
