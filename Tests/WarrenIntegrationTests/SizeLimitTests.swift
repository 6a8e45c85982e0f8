import Foundation
import NIOHTTP1
import Testing
import WarrenCore

@Suite("Size limits are counted", .serialized)
struct SizeLimitTests {
    @Test func tooLargeMessagesAndFramesAreAnsweredAndCounted() async throws {
        let warren = try await WarrenInstance.start(["WARREN_LIMITS_MAX_MESSAGE_BYTES": "1024", "WARREN_LIMITS_MAX_FRAME_BYTES": "8192"])
        defer { Task { await warren.stop() } }
        let user = uniqueUser("big")
        let s = try await warren.socket(user)
        let body = String(repeating: "x", count: 2000)
        let refused = try await s.request(#"{"op":"pub","route":"room.big","body":"\#(body)","cid":"c1"}"#, expect: "error")
        #expect(refused["code"]?.stringValue == "too_large" && refused["ref"]?.stringValue == "c1")
        let http = try await HTTPTestClient.request(.POST, port: warren.port, "/v1/messages?user=\(user)",
                                                    body: #"{"route":"room.big","body":"\#(body)"}"#)
        #expect(http.status == 413)
        try await s.send(#"{"op":"ping","pad":"\#(String(repeating: "y", count: 20_000))"}"#)
        #expect(await s.closeCode() == 1009)
        #expect(try await GreedyClientTests.limitHits(warren, "ws", "message_size") == 1)
        #expect(try await GreedyClientTests.limitHits(warren, "poll", "message_size") == 1)
        #expect(try await GreedyClientTests.limitHits(warren, "ws", "frame_size") == 1)
    }
}
