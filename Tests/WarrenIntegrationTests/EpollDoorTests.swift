import Foundation
import Testing
import WarrenCore

/// The public listener's two drivers (`http.poll_door`): the epoll door (the default: pollers
/// served on its own threads, connections that need a channel handed to NIO) and NIO's
/// channels. An answer larger than the socket takes at once is written whole and in order on
/// either. (Every other polling, WebSocket and hostile-HTTP test goes through the default
/// door; HostileClientTests runs its probes on both.)
@Suite("The public listener's doors")
struct EpollDoorTests {
    @Test(arguments: ["epoll", "nio"])
    func theDoorServesThePublicListener(door: String) async throws {
        let warren = try await WarrenInstance.start(["WARREN_HTTP_POLL_DOOR": door])
        defer { Task { await warren.stop() } }
        let line = warren.process.log.split(separator: "\n").first { $0.contains("HTTP server listening") }
        #expect(line?.contains("pollers=epoll") == (door == "epoll"), "\(line ?? "no listening line")")
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/healthz").status == 200)
    }

    /// 100 messages of 30 KB, 34 to an answer (1 MB, `poll.max_answer_bytes`), to four pipelined
    /// polls of a client that reads nothing for a second: 3 MB, more than the socket takes, so
    /// answers wait for it and go out as it drains, whole and in order, and a router request
    /// after them is answered last (on the epoll door, handed to NIO once they are written).
    @Test(arguments: ["epoll", "nio"])
    func anAnswerLargerThanTheSocketTakesGoesOutWholeBeforeTheNextOne(door: String) async throws {
        let warren = try await WarrenInstance.start(["WARREN_HTTP_IDLE_TIMEOUT": "3600", "WARREN_HTTP_POLL_DOOR": door])
        defer { Task { await warren.stop() } }
        let (alice, room, poller, sender) = try await Poller.onNewRoom("big", of: warren)
        let body = String(repeating: "x", count: 30_000)
        for i in 0..<100 {
            _ = try await sender.request(#"{"op":"pub","route":"\#(room)","body":"\#(i)\#(body)","cid":"b\#(i)"}"#, expect: "puback")
        }
        // Every message is in the session's buffer before the poll: a sentinel published last.
        _ = try await sender.request(#"{"op":"pub","route":"\#(room)","body":"sentinel","cid":"s"}"#, expect: "puback")
        let poll = "GET /v1/poll/\(poller.session)?user=\(alice)&wait=0 HTTP/1.1\r\nHost: x\r\n\r\n"
        let health = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        let answer = try await RawHTTP.exchange(port: warren.port, [RawHTTP.bytes(poll + poll + poll + poll + health)], timeout: .seconds(30),
                                                holdReads: .seconds(1))
        let text = answer.text
        #expect(answer.closedByServer)
        #expect(text.components(separatedBy: "HTTP/1.1 200").count - 1 == 5, "\(text.prefix(300))")
        // An answer carries at most `poll.max_answer_bytes` (1 MB): the next polls carry the rest.
        for i in 0..<100 { #expect(text.components(separatedBy: "\"\(i)\(body)\"").count - 1 == 1, "message \(i) whole, once") }
        // In order: the answers (the last ending with the sentinel), then health's.
        let first = text.range(of: "\"0\(body)\"")
        let sentinel = first.flatMap { text.range(of: "\"sentinel\"", range: $0.upperBound..<text.endIndex) }
        let ok = sentinel.flatMap { text.range(of: "ok\n", range: $0.upperBound..<text.endIndex) }
        #expect(ok != nil, "answers in request order: \(text.suffix(600))")
        await sender.close()
    }
}
