import AMQPClient
import Foundation
import NIOCore
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

    /// A plain AMQP publisher may send up to the broker's `max_message_size`. A message whose
    /// envelope is over `limits.max_message_bytes` reaches no client: the live copy is dropped,
    /// the inbox copy rejected (not delivered again when the user comes back), the socket stays
    /// open, and both are counted as `dropped{reason="too_large"}`.
    @Test func aBrokerMessageOverTheLimitReachesNoClient() async throws {
        let warren = try await WarrenInstance.start(["WARREN_LIMITS_MAX_MESSAGE_BYTES": "1024"])
        defer { Task { await warren.stop() } }
        let user = uniqueUser("svc"), room = "room.\(uniqueUser("big"))"
        let s = try await warren.socketWithInboxAndRoom(user, room: room)
        let (amqp, channel) = try await WarrenInstance.amqpChannel()
        defer { Task { await amqp.close() } }
        let big = String(repeating: "x", count: 4096)
        for (key, body) in [("svc.\(user)", big), (room, big), ("svc.\(user)", "inbox sentinel"), (room, "room sentinel")] {
            try await channel.publish(body, exchange: warren.exchange, routingKey: key,
                                      properties: BasicProperties(contentType: "text/plain", appID: "svc"))
        }
        let first = try await s.next(op: "msg"), second = try await s.next(op: "msg")
        let bodies = Set([first.env?["body"]?.stringValue, second.env?["body"]?.stringValue])
        #expect(bodies == ["inbox sentinel", "room sentinel"], "\(first) \(second)")
        if let id = (first["sub"]?.stringValue == "in" ? first : second).env?["id"]?.stringValue {
            try await s.send(#"{"op":"ack","id":"\#(id)"}"#)
        }
        let r = try await HTTPTestClient.request(.GET, port: warren.port, "/metrics")
        let samples = PrometheusSamples(r.body)
        #expect(samples.value("warren_dropped_total", [("route", "other"), ("reason", "too_large")]) == 1, "the inbox copy")
        #expect(samples.value("warren_dropped_total", [("route", "rooms"), ("reason", "too_large")]) == 1, "the live copy")
        await s.close()

        // Back again: nothing waits in the inbox (a sentinel published now is the first delivery).
        let again = try await warren.socketWithInboxAndRoom(user, room: room)
        try await channel.publish("back", exchange: warren.exchange, routingKey: "svc.\(user)",
                                  properties: BasicProperties(contentType: "text/plain", appID: "svc"))
        #expect(try await again.next(op: "msg").env?["body"]?.stringValue == "back")
        await again.close()
        _ = try? await channel.queueDelete("warren.inbox.\(user).d")
    }
}
