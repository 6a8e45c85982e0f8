import AMQPClient
import Logging
import NIOCore
import Testing
@testable import WarrenCore

/// `app_id=warren` marks Warren's own publishes, whose bodies are passed to clients untouched;
/// any AMQP publisher can set it. A body under that mark that is not Warren's envelope for the
/// message is translated like any plain AMQP client's: clients always get JSON, and an inbox
/// delivery is keyed by the id the client sees (so its ack settles it).
@Suite("Messages marked app_id=warren that are not Warren's envelopes")
struct ForeignOwnMarkTests {
    static let mark = EnvelopeAMQPMapping.appID

    @Test func aLiveCopyReachesClientsAsJSON() async throws {
        let live = FakeChannel("live"), binds = FakeChannel("binds")
        let hub = LiveHub(channel: live, bindChannel: binds, queue: "warren.live.t", exchange: "chat",
                          metrics: WarrenMetrics(classifier: RouteClassifier([])), logger: Logger(label: "test"))
        try await hub.start()
        let receiver = CollectingLiveReceiver()
        try await hub.subscribe(try TopicPattern("room.x"), subscriber: LiveSubscriber(session: ObjectIdentifier(receiver),
                                                                                       subscriptionID: "r", receiver: receiver))
        let consumer = live.consumerTags[0]
        let id = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d11"
        for body in ["}{ not JSON", #"{"v":1,"id":"\#(id)","route":"room.x","body":"cut short"#] {
            live.deliver(to: consumer, routingKey: "room.x", body: body, properties: BasicProperties(messageID: id, appID: Self.mark))
        }
        // Warren's own envelope still passes through as it is.
        let own = Envelope(id: id, route: "room.x", type: "text", from: "alice", via: .ws, ts: 1, body: .string("own"))
        live.deliver(to: consumer, routingKey: "room.x", body: String(decoding: own.encoded(), as: UTF8.self),
                     properties: EnvelopeAMQPMapping.properties(for: own))
        let frames = receiver.bodies
        #expect(frames.count == 3)
        let envelopes = frames.compactMap { try? JSONParser.parse($0) }.compactMap { $0["env"] }
        #expect(envelopes.count == 3, "every frame is JSON: \(frames)")
        #expect(envelopes.map { $0["body"]?.stringValue } == ["}{ not JSON", #"{"v":1,"id":"\#(id)","route":"room.x","body":"cut short"#, "own"])
        #expect(envelopes.map { $0["via"]?.stringValue } == ["amqp", "amqp", "ws"])
        #expect(frames[2].contains(String(decoding: own.encoded(), as: UTF8.self)))
    }

    @Test func anInboxCopyIsKeyedByTheIDTheClientSees() async throws {
        let channels = FakeChannels(), receiver = RecordingInboxReceiver()
        let consumer = InboxConsumer(channels: channels, queue: "warren.inbox.alice.d", exchange: "chat", settings: InboxSettings(),
                                     metrics: WarrenMetrics(classifier: RouteClassifier([])), receiver: receiver)
        try await consumer.startConsuming()
        let channel = channels.consuming(prefetch: InboxSettings().prefetch)
        // An envelope whose id is not the message's message_id (a publisher that copied Warren's
        // properties onto another message, say).
        let seen = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d21", other = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d22"
        let body = Envelope(id: seen, route: "alice.bob", type: "text", from: "bob", via: .ws, ts: 1, body: .string("hi")).encoded()
        let tag = channel.deliver(to: channel.consumerTags[0], routingKey: "alice.bob", body: String(decoding: body, as: UTF8.self),
                                  properties: BasicProperties(messageID: other, appID: Self.mark))
        #expect(receiver.ids == [seen])
        let envelope = try JSONParser.parse(try #require(receiver.envelopes.first))
        #expect(envelope["id"]?.stringValue == seen && envelope["via"]?.stringValue == "amqp")
        #expect(consumer.ack(envelopeID: seen), "the client's ack of the id it sees settles the delivery")
        #expect(channel.calls.last == "ack \(tag)")
    }
}
