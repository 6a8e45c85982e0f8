import AMQPClient
import Foundation
import Testing
import WarrenCore

/// Anything on the exchange may come from any AMQP publisher: a message marked as Warren's own
/// (`app_id=warren`) whose body is not Warren's envelope, or a `ts` header that is no time, must
/// reach clients as envelopes (JSON frames, ids their acks settle) and leave the process running.
@Suite("Messages from the broker that Warren does not trust")
struct UntrustedBrokerMessageTests {
    @Test func aFalseMarkOrANonsenseTimeReachesClientsAsEnvelopes() async throws {
        let warren = try await WarrenInstance.start()
        defer { Task { await warren.stop() } }
        let user = uniqueUser("svc"), room = "room.\(uniqueUser("odd"))", inbox = "svc.\(user)"
        let s = try await warren.socketWithInboxAndRoom(user, room: room)
        let (amqp, channel) = try await WarrenInstance.amqpChannel()
        defer { Task { await amqp.close() } }
        let marked = BasicProperties(messageID: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d31", appID: EnvelopeAMQPMapping.appID)
        // Envelope-shaped, under the mark, but its id is not the message's message_id.
        let copiedID = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d32"
        let copied = #"{"v":1,"id":"\#(copiedID)","route":"\#(inbox)","type":"text","from":"bot","via":"ws","ts":1,"body":"copied"}"#
        let messages: [(key: String, body: String, properties: BasicProperties)] = [
            (room, "}{ not JSON", marked),
            (inbox, copied, marked),
            (room, "timed", BasicProperties(headers: ["ts": .int64(Int64.min)], appID: "svc")),
            (inbox, "timed", BasicProperties(headers: ["ts": .int64(-10_000_000_000_000)], appID: "svc")),
            (room, "room sentinel", BasicProperties(appID: "svc")),
            (inbox, "inbox sentinel", BasicProperties(appID: "svc")),
        ]
        for m in messages {
            try await channel.publish(m.body, exchange: warren.exchange, routingKey: m.key, properties: m.properties)
        }
        var got: [String: [String]] = [:]
        while got["room"]?.last != "room sentinel" || got["in"]?.last != "inbox sentinel" {
            let f = try await s.next(op: "msg")
            let sub = f["sub"]?.stringValue ?? "?", body = f.env?["body"]?.stringValue ?? "\(f)"
            got[sub, default: []].append(body)
            if sub == "in", let id = f.env?["id"]?.stringValue {
                if body == "copied" { #expect(id == copiedID, "the id the client sees is the one its ack names") }
                try await s.send(#"{"op":"ack","id":"\#(id)"}"#)
            }
        }
        #expect(got["room"] == ["}{ not JSON", "timed", "room sentinel"])
        #expect(got["in"] == ["copied", "timed", "inbox sentinel"])
        #expect(try await HTTPTestClient.request(.GET, port: warren.port, "/healthz").status == 200)
        await s.close()

        // Every inbox delivery was settled by the client's ack: a message published now is the
        // first thing the inbox hands out when the user is back.
        let again = try await warren.socketWithInboxAndRoom(user, room: room)
        try await channel.publish("back", exchange: warren.exchange, routingKey: inbox, properties: BasicProperties(appID: "svc"))
        #expect(try await again.next(op: "msg").env?["body"]?.stringValue == "back")
        await again.close()
        _ = try? await channel.queueDelete("warren.inbox.\(user).d")
    }
}
