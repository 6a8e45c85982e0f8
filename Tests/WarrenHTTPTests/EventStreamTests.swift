import NIOCore
import Testing
import WarrenCore
@testable import WarrenHTTP

/// The event-stream door's pure parts: the events it writes, and what a stream may ask for.
@Suite("Event streams")
struct EventStreamTests {
    static let id = "01a252e3-4405-7192-9313-347e9526b644"
    static let envelope = #"{"v":1,"id":"\#(id)","route":"room.a","type":"text","from":"alice","via":"ws","ts":1,"body":"hi"}"#

    static func text(_ buffer: ByteBuffer) -> String { String(buffer: buffer) }

    @Test func aMessageIsAnEventWithTheEnvelopesIDAndTheEnvelopeAsData() {
        let frame = ByteBuffer(bytes: ServerFrame.message(sub: "s,\"env\":x", envelope: Array(Self.envelope.utf8), redelivered: false))
        #expect(Self.text(EventStreamEncoding.event(frame)) == "id: \(Self.id)\ndata: \(Self.envelope)\n\n")
        let redelivered = ByteBuffer(bytes: ServerFrame.message(sub: "s", envelope: Array(Self.envelope.utf8), redelivered: true))
        #expect(Self.text(EventStreamEncoding.event(redelivered)) == "id: \(Self.id)\ndata: \(Self.envelope)\n\n")
    }

    @Test func anyOtherFrameIsAControlEvent() {
        let frame = ByteBuffer(bytes: ServerFrame.subscribed(id: "room.a", pattern: "room.a", mode: .live))
        #expect(Self.text(EventStreamEncoding.event(frame)) == "event: control\ndata: \(String(buffer: frame))\n\n")
    }

    /// A line break inside the data (JSON whitespace from a publisher Warren passes through,
    /// or a frame that is not JSON at all) must not end the event: each line is a `data:` line
    /// of its own, CR, LF or CRLF alike.
    @Test func lineBreaksInTheDataCannotEndTheEvent() {
        let spaced = "{\"v\":1,\r\n\"id\":\"\(Self.id)\",\n\n\"x\":1\r}"
        let notJSON = "{\"op\":\"msg\",\"sub\":\"s\",\"env\":{\n\nid: evil\ndata: forged"
        for frame in [ByteBuffer(bytes: ServerFrame.message(sub: "s", envelope: Array(spaced.utf8), redelivered: false)), ByteBuffer(string: notJSON)] {
            let event = Self.text(EventStreamEncoding.event(frame))
            #expect(event.hasSuffix("\n\n") && !event.dropLast(2).contains("\n\n"), "\(event)")
            #expect(event.dropLast(2).split(separator: "\n", omittingEmptySubsequences: false).allSatisfy {
                $0.hasPrefix("data: ") || $0 == "id: \(Self.id)" || $0 == "event: control"
            }, "\(event)")
        }
    }

    @Test func aStreamAsksForPatternsWithinItsRightsAndSinceIsAMessageID() throws {
        let rules = AccessPolicy.standard.resolved(for: "bob")
        func ask(_ target: String, lastEventID: String? = nil) -> Result<EventStreamDoor.Ask, ProtocolError> {
            EventStreamDoor.ask(query: Query(target: target), lastEventID: lastEventID, rules: rules, maxSubscriptions: 3)
        }
        let both = try ask("/v1/sse?pattern=room.a&pattern=%23.bob.%23,room.a").get()
        #expect(both.patterns.map(\.value) == ["room.a", "#.bob.#"] && both.since == nil)
        #expect(try ask("/v1/sse?pattern=room.a&since=\(Self.id)").get().since == Self.id)
        #expect(try ask("/v1/sse?pattern=room.a&since=\(Self.id)", lastEventID: "01a252e3-441a-7295-88bb-2ee76852f799").get().since
            == "01a252e3-441a-7295-88bb-2ee76852f799", "Last-Event-ID wins: it is the newest")
        func code(_ result: Result<EventStreamDoor.Ask, ProtocolError>) -> ErrorCode? {
            if case .failure(let error) = result { return error.code }
            return nil
        }
        #expect(code(ask("/v1/sse")) == .badFrame)
        #expect(code(ask("/v1/sse?pattern=alice.carol")) == .forbidden)
        #expect(code(ask("/v1/sse?pattern=room..a")) == .badRoute)
        #expect(code(ask("/v1/sse?pattern=room.a", lastEventID: "nope")) == .badFrame)
        #expect(code(ask("/v1/sse?pattern=room.a,room.b,room.c,room.d")) == .rateLimited)
    }
}
