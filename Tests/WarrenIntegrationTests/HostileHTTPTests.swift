import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

/// Issue 6, item 5: malformed HTTP ends in a 4xx or a closed connection, never a crash, and
/// leaves the process's memory where it was.
@Suite("Hostile HTTP", .serialized)
struct HostileHTTPTests {
    static func rss(_ warren: WarrenInstance) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(warren.process.process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    /// Each case: the bytes, and whether the answer is acceptable.
    static let cases: [(String, [UInt8])] = {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let deepBody = #"{"route":"room.x","body":"# + deep + "}"
        let nestedObject = String(repeating: #"{"a":"#, count: 5000) + "1" + String(repeating: "}", count: 5000)
        var invalidUTF8 = RawHTTP.bytes("POST /v1/messages?user=mallory HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 30\r\n\r\n")
        invalidUTF8 += RawHTTP.bytes(#"{"route":"room.x","body":""#) + [0xff, 0xfe, 0x22, 0x7d]
        return [
            ("bad method", RawHTTP.bytes("BREW /v1/stats HTTP/1.1\r\nHost: x\r\n\r\n")),
            ("garbage", [0, 1, 2, 3, 0xff, 13, 10, 13, 10]),
            ("bad version", RawHTTP.bytes("GET / HTTP/9.9\r\nHost: x\r\n\r\n")),
            ("huge header", RawHTTP.bytes("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + String(repeating: "a", count: 200_000) + "\r\n\r\n")),
            ("many headers", RawHTTP.bytes("GET /healthz HTTP/1.1\r\nHost: x\r\n" + (0..<2000).map { "X-\($0): y\r\n" }.joined() + "\r\n")),
            ("huge URL", RawHTTP.bytes("GET /v1/ws?user=" + String(repeating: "a", count: 100_000) + " HTTP/1.1\r\nHost: x\r\n\r\n")),
            ("invalid UTF-8 in the query", RawHTTP.bytes("GET /v1/ws?user=%FF%FE HTTP/1.1\r\nHost: x\r\n\r\n")),
            ("invalid UTF-8 in a body", invalidUTF8),
            ("deep JSON arrays", RawHTTP.bytes("POST /v1/messages?user=mallory HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                               + "Content-Length: \(deepBody.utf8.count)\r\n\r\n" + deepBody)),
            ("deep JSON objects", RawHTTP.bytes("POST /v1/poll?user=mallory HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                                + "Content-Length: \(nestedObject.utf8.count)\r\n\r\n" + nestedObject)),
            ("length and chunked", RawHTTP.bytes("POST /v1/messages?user=mallory HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n"
                                                 + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")),
            ("negative length", RawHTTP.bytes("POST /v1/messages?user=mallory HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n")),
            ("body shorter than its length", RawHTTP.bytes("POST /v1/messages?user=mallory HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{}")),
            ("websocket upgrade with a bad key", RawHTTP.bytes("GET /v1/ws?user=mallory HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                                                               + "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n")),
        ]
    }()

    /// A URL longer than a request head may be is answered `414` with Warren's JSON error (it
    /// was hummingbird's bare `400`), and the node carries on.
    @Test func aURLTooLongIsAnswered414WithItsCode() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let long = "GET /v1/poll/" + String(repeating: "a", count: 20_000) + "?user=mallory HTTP/1.1\r\nHost: x\r\n\r\n"
        let answer = try await RawHTTP.exchange(port: warren.port, [RawHTTP.bytes(long)], timeout: .seconds(5))
        #expect(answer.status == 414 && answer.text.contains(#""code":"too_large""#), "\(answer.text.prefix(300))")
        #expect(answer.closedByServer)
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/healthz").status == 200)
    }

    @Test func malformedRequestsEndInA4xxOrAClosedConnection() async throws {
        let warren = try await WarrenInstance.start(["WARREN_HTTP_HEAD_TIMEOUT": "2", "WARREN_HTTP_IDLE_TIMEOUT": "2"])
        defer { Task { await warren.stop() } }
        for (name, bytes) in Self.cases {
            let answer = try await RawHTTP.exchange(port: warren.port, [bytes], timeout: .seconds(5))
            // A method no server knows is a 501 (RFC 9110 §9.1); every other refusal a 4xx.
            let refused: ClosedRange<Int> = name == "bad method" ? 501...501 : 400...499
            let ok = answer.closedByServer || (answer.status.map { refused.contains($0) } ?? false)
            #expect(ok, "\(name): \(answer.text.prefix(200)) closed: \(answer.closedByServer)")
            #expect(answer.status.map { refused.contains($0) } ?? true, "\(name): \(answer.text.prefix(200))")
        }
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/healthz").status == 200)
    }

    /// A request HTTP's parser refuses is answered `400` before the connection closes (not
    /// closed unanswered), whichever parser meets it; a body that breaks off mid-chunk is a
    /// `bad_frame`, not a `too_large`.
    @Test func requestsTheParserRefusesAreAnswered400() async throws {
        let warren = try await WarrenInstance.start(["WARREN_HTTP_HEAD_TIMEOUT": "2", "WARREN_HTTP_IDLE_TIMEOUT": "2"])
        defer { Task { await warren.stop() } }
        let body = #"{"route":"room.x","body":"x"}"#
        let cases: [(String, String)] = [
            ("garbage", "GARBAGE\r\n\r\n"),
            // A client told https:// or wss:// for a plain port: refused at once, not at the head timeout.
            ("a TLS ClientHello", "\u{16}\u{03}\u{01}\u{02}\u{00}\u{01}\u{00}\u{01}\u{fc}\u{03}\u{03}"),
            ("length and chunked", "POST /v1/messages?user=mallory HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
            ("two lengths", "POST /v1/messages?user=mallory HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n{\"a\":1}"),
            ("negative length", "POST /v1/messages?user=mallory HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"),
            ("bare LF line ends", "GET /healthz HTTP/1.1\nHost: x\n\n"),
            ("a control byte in a field", "GET /healthz HTTP/1.1\r\nHost: x\r\nX: a\u{01}b\r\n\r\n"),
            ("a chunk shorter than it says", "POST /v1/messages?user=mallory HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + String(body.utf8.count - 1, radix: 16) + "\r\n" + body + "\r\n0\r\n\r\n"),
            ("a good request, then a bad one", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nContent-Length: x\r\n\r\n"),
        ]
        for (name, text) in cases {
            let answer = try await RawHTTP.exchange(port: warren.port, [RawHTTP.bytes(text)], timeout: .seconds(10))
            let last = answer.text.components(separatedBy: "HTTP/1.1 ").last ?? ""
            #expect(last.hasPrefix("400 "), "\(name): \(answer.text.prefix(300))")
            #expect(answer.closedByServer, "\(name): left open")
            if name.hasPrefix("a chunk") { #expect(answer.text.contains(#""code":"bad_frame""#), "\(answer.text)") }
        }
        // A chunked body that is well formed is read.
        let chunked = "POST /v1/messages?user=mallory HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            + String(body.utf8.count, radix: 16) + "\r\n" + body + "\r\n0\r\n\r\n"
        let served = try await RawHTTP.exchange(port: warren.port, [RawHTTP.bytes(chunked)])
        #expect(served.status == 202, "\(served.text)")
    }

    @Test func aSlowlorisRequestIsClosedAtTheHeaderTimeout() async throws {
        let warren = try await WarrenInstance.start(["WARREN_HTTP_HEAD_TIMEOUT": "2", "WARREN_HTTP_IDLE_TIMEOUT": "2"])
        defer { Task { await warren.stop() } }
        // One header byte every 200 ms for 20 s, never finishing the head: closed long before.
        let head = RawHTTP.bytes("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + String(repeating: "a", count: 100))
        let answer = try await RawHTTP.exchange(port: warren.port, head.map { [$0] }, pause: .milliseconds(200), timeout: .seconds(1),
                                                stopWhenClosed: true)
        #expect(answer.closedByServer && answer.text.isEmpty, "\(answer.text)")
        #expect(answer.chunksSent < head.count, "the server waited for all \(head.count) bytes")
        print("slowloris closed after \(answer.chunksSent) of \(head.count) bytes (one per 200 ms)")
        // A request that completes its head in time is served as usual.
        let fine = try await RawHTTP.exchange(port: warren.port, [RawHTTP.bytes("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")])
        #expect(fine.status == 200)
    }

    @Test func memoryStaysFlatUnderRepeatedBadInput() async throws {
        let warren = try await WarrenInstance.start(["WARREN_HTTP_HEAD_TIMEOUT": "2", "WARREN_HTTP_IDLE_TIMEOUT": "2"])
        defer { Task { await warren.stop() } }
        // A round sends every case at once, ten times over (140 connections).
        func round() async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<10 {
                    for (_, bytes) in Self.cases {
                        group.addTask { _ = try await RawHTTP.exchange(port: warren.port, [bytes], timeout: .seconds(5)) }
                    }
                }
                try await group.waitForAll()
            }
        }
        for _ in 0..<2 { try await round() } // warm up: allocator pools, caches
        let before = Self.rss(warren)
        for _ in 0..<10 { try await round() }
        let after = Self.rss(warren)
        print("hostile HTTP: warren RSS \(before) KiB before, \(after) KiB after 10 more rounds (1,400 connections)")
        #expect(after - before < 20 * 1024, "RSS grew from \(before) KiB to \(after) KiB")
    }
}
