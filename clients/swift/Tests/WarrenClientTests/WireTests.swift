import Foundation
import Testing
@testable import WarrenClient

/// The frames and bodies the client reads and writes, as Warren's protocol has them.
@Suite("The wire format")
struct WireTests {
    @Test func aDeliveryFrameDecodesWithItsEnvelope() throws {
        let text = #"{"op":"msg","sub":"s1","redelivered":true,"env":{"v":1,"id":"0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e","#
            + #""route":"alice.bob","type":"text","from":"alice","via":"ws","ts":1763726400123,"body":{"text":"hi","n":[1,null]}}}"#
        let frame = try JSONDecoder().decode(Wire.ServerFrame.self, from: Data(text.utf8))
        #expect(frame.op == "msg" && frame.sub == "s1" && frame.redelivered == true)
        let env = try #require(frame.env)
        #expect(env.route == "alice.bob" && env.from == "alice" && env.ts == 1_763_726_400_123)
        #expect(env.body == ["text": "hi", "n": [1, nil]])
        #expect(env.body["text"]?.stringValue == "hi")
    }

    @Test func anErrorFrameCarriesItsCodeAndRef() throws {
        let frame = try JSONDecoder().decode(Wire.ServerFrame.self,
                                             from: Data(#"{"op":"error","code":"forbidden","message":"no","ref":"s1"}"#.utf8))
        #expect(frame.code == "forbidden" && frame.ref == "s1")
    }

    /// A live subscription asks again `since` its last envelope; the answer says where it
    /// started and how that went.
    @Test func aResubscriptionCarriesSinceAndItsAnswerSaysHowItWent() throws {
        let sub = Wire.Sub(id: "r", pattern: "room.a", mode: "live", presence: nil, since: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e")
        let json = try JSONDecoder().decode(JSONValue.self, from: Data(Wire.encode(sub).utf8))
        #expect(json == ["op": "sub", "id": "r", "pattern": "room.a", "mode": "live", "since": "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e"])
        let answer = try JSONDecoder().decode(Wire.ServerFrame.self, from: Data(
            #"{"op":"subscribed","id":"r","pattern":"room.a","mode":"live","at":"0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9f","recovered":false,"reason":"too_many"}"#.utf8))
        #expect(answer.at == "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9f" && answer.recovered == false && answer.reason == "too_many")
    }

    @Test func aPublishIsTheFrameWarrenReads() throws {
        let pub = Wire.Pub(route: "alice.bob", routes: nil, type: "text", body: "hi", cid: "c1", headers: nil, transient: nil)
        let json = try JSONDecoder().decode(JSONValue.self, from: Data(Wire.encode(pub).utf8))
        #expect(json == ["op": "pub", "route": "alice.bob", "type": "text", "body": "hi", "cid": "c1"])
    }

    /// Answers of one session are handed on in the order their node made them.
    @Test func pollAnswersAreOrderedByTheirCursors() throws {
        func answer(_ cursor: String) throws -> Wire.PollAnswer {
            try JSONDecoder().decode(Wire.PollAnswer.self, from: Data(#"{"messages":[],"cursor":"\#(cursor)"}"#.utf8))
        }
        let ordered = Wire.PollAnswer.inOrderMade([try answer("n1.7"), try answer("n1.3")])
        #expect(ordered.map(\.cursor) == ["n1.3", "n1.7"])
        let mixed = Wire.PollAnswer.inOrderMade([try answer("n2.7"), try answer("n1.3")])
        #expect(mixed.map(\.cursor) == ["n2.7", "n1.3"], "several nodes: as given")
    }

    @Test func anHTTPErrorBodyDecodes() throws {
        let body = try JSONDecoder().decode(Wire.ErrorBody.self, from: Data(#"{"error":{"code":"not_found","message":"no such session"}}"#.utf8))
        #expect(body.error.code == "not_found" && body.error.ref == nil)
    }
}
