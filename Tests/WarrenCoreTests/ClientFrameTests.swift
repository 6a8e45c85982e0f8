import Testing
@testable import WarrenCore

@Suite struct ClientFrameTests {
    func parse(_ s: String) throws(ProtocolError) -> ClientFrame { try ClientFrame.parse(Array(s.utf8)) }

    func expectError(_ s: String, _ code: ErrorCode, ref: String? = nil) {
        do {
            _ = try parse(s)
            Issue.record("\(s) must fail")
        } catch {
            #expect(error.code == code, "\(s): \(error)")
            #expect(error.ref == ref, "\(s)")
        }
    }

    @Test func subscribeDefaultsToLive() throws {
        #expect(try parse(##"{"op":"sub","id":"s1","pattern":"#.alice.#"}"##) == .sub(id: "s1", pattern: try TopicPattern("#.alice.#"), mode: .live))
        #expect(try parse(##"{"op":"sub","id":"s2","pattern":"alice.bob","mode":"inbox","extra":1}"##)
            == .sub(id: "s2", pattern: try TopicPattern("alice.bob"), mode: .inbox))
    }

    @Test func publishIgnoresFieldsWarrenStamps() throws {
        guard case .pub(let p) = try parse(##"{"op":"pub","route":"alice.bob","body":{"t":"hi"},"cid":"c1","from":"mallory","id":"x","ts":1,"via":"amqp","v":9}"##) else {
            Issue.record(); return
        }
        #expect(p.routes.map(\.value) == ["alice.bob"] && !p.multicast && p.type == "text" && p.cid == "c1")
        #expect(p.body == .object([(key: "t", value: .string("hi"))]))
    }

    @Test func multicastAndOtherOps() throws {
        guard case .pub(let p) = try parse(##"{"op":"pub","routes":["alice.bob","room.lobby"],"type":"notice","transient":true,"headers":{"a":"b"}}"##) else {
            Issue.record(); return
        }
        #expect(p.multicast && p.routes.count == 2 && p.transient && p.headers.count == 1 && p.body == .null)
        #expect(try parse(##"{"op":"unsub","id":"s1"}"##) == .unsub(id: "s1"))
        #expect(try parse(##"{"op":"ack","id":"i1"}"##) == .ack(ids: ["i1"]))
        #expect(try parse(##"{"op":"ack","ids":["i1","i2"]}"##) == .ack(ids: ["i1", "i2"]))
        #expect(try parse(##"{"op":"ping"}"##) == .ping)
    }

    @Test func badInputGetsTheRightCodeAndRef() {
        expectError("not json", .badFrame)
        expectError("[1]", .badFrame)
        expectError(##"{"id":"s1"}"##, .badFrame)
        expectError(##"{"op":"dance"}"##, .badFrame)
        expectError(##"{"op":"sub","pattern":"#"}"##, .badFrame)
        expectError(##"{"op":"sub","id":"s1"}"##, .badFrame, ref: "s1")
        expectError(##"{"op":"sub","id":"s1","pattern":"a..b"}"##, .badRoute, ref: "s1")
        expectError(##"{"op":"sub","id":"s1","pattern":"a","mode":"forever"}"##, .badFrame, ref: "s1")
        expectError(##"{"op":"pub","body":"x","cid":"c9"}"##, .badFrame, ref: "c9")
        expectError(##"{"op":"pub","route":"room.#","cid":"c9"}"##, .badRoute, ref: "c9")
        expectError(##"{"op":"pub","route":"\##(String(repeating: "a.", count: 150))b","cid":"c9"}"##, .badRoute, ref: "c9")
        expectError(##"{"op":"pub","route":"a","type":"bad type","cid":"c9"}"##, .badFrame, ref: "c9")
        expectError(##"{"op":"pub","route":"a","cid":""}"##, .badFrame)
        expectError(##"{"op":"pub","routes":[],"cid":"c"}"##, .badFrame, ref: "c")
        expectError(##"{"op":"pub","routes":["alice.bob","room.x","alice.bob"],"cid":"c"}"##, .badFrame, ref: "c")
        expectError(##"{"op":"pub","route":"alice.bob","routes":["alice.carol"],"cid":"c"}"##, .badFrame, ref: "c")
        let headers = (0..<33).map { "\"h\($0)\":\"v\"" }.joined(separator: ",")
        expectError(##"{"op":"pub","route":"a","cid":"c","headers":{\##(headers)}}"##, .badFrame, ref: "c")
        expectError(##"{"op":"ack"}"##, .badFrame)
    }

    @Test func presenceOps() throws {
        #expect(try parse(#"{"op":"sub","id":"s1","pattern":"room.lobby","presence":true}"#)
            == .sub(id: "s1", pattern: try TopicPattern("room.lobby"), mode: .live, presence: true))
        #expect(try parse(#"{"op":"presence","id":"p1","route":"room.lobby"}"#) == .presence(id: "p1", route: "room.lobby"))
        expectError(#"{"op":"sub","id":"s2","pattern":"room.*","presence":true}"#, .badFrame, ref: "s2")
        expectError(##"{"op":"sub","id":"s3","pattern":"#.alice.#","presence":true}"##, .badFrame, ref: "s3")
        expectError(#"{"op":"sub","id":"s4","pattern":"alice.bob","mode":"inbox","presence":true}"#, .badFrame, ref: "s4")
        expectError(#"{"op":"sub","id":"s5","pattern":"room.x","presence":"yes"}"#, .badFrame, ref: "s5")
        expectError(#"{"op":"presence","id":"p2"}"#, .badFrame, ref: "p2")
    }

    @Test func storeOps() throws {
        #expect(try parse(#"{"op":"history","id":"h1","route":"alice.bob","before":"x","limit":20}"#)
            == .history(id: "h1", route: "alice.bob", before: "x", limit: 20))
        #expect(try parse(#"{"op":"history","id":"h2","route":"alice.bob"}"#) == .history(id: "h2", route: "alice.bob", before: nil, limit: nil))
        #expect(try parse(#"{"op":"conversations","id":"c1"}"#) == .conversations(id: "c1"))
        #expect(try parse(#"{"op":"read","route":"alice.bob","id":"m1"}"#) == .read(route: "alice.bob", id: "m1"))
        expectError(#"{"op":"history","id":"h3"}"#, .badFrame, ref: "h3")
        expectError(#"{"op":"history","id":"h4","route":"a","limit":"ten"}"#, .badFrame, ref: "h4")
        expectError(#"{"op":"conversations"}"#, .badFrame)
        expectError(#"{"op":"read","id":"m1"}"#, .badFrame, ref: "m1")
    }

    @Test func serverFrames() {
        #expect(String(decoding: ServerFrame.puback(cid: "c1", ids: ["i1"], multicast: false), as: UTF8.self) == ##"{"op":"puback","cid":"c1","id":"i1"}"##)
        #expect(String(decoding: ServerFrame.puback(cid: "c1", ids: ["i1", "i2"], multicast: true), as: UTF8.self) == ##"{"op":"puback","cid":"c1","ids":["i1","i2"]}"##)
        #expect(String(decoding: ServerFrame.error(ProtocolError(.forbidden, "no", ref: "s1")), as: UTF8.self) == ##"{"op":"error","code":"forbidden","message":"no","ref":"s1"}"##)
        #expect(String(decoding: ServerFrame.message(sub: "s1", envelope: Array(##"{"v":1}"##.utf8), redelivered: true), as: UTF8.self)
            == ##"{"op":"msg","sub":"s1","env":{"v":1},"redelivered":true}"##)
        #expect(String(decoding: ServerFrame.subscribed(id: "s1", pattern: "#.a.#", mode: .inbox), as: UTF8.self)
            == ##"{"op":"subscribed","id":"s1","pattern":"#.a.#","mode":"inbox"}"##)
        #expect(ErrorCode.tooLarge.httpStatus == 413 && ErrorCode.unavailable.httpStatus == 503)
    }
}
