import AMQPClient
import NIOCore
import Testing
@testable import WarrenCore

@Suite struct JSONTests {
    @Test(arguments: [
        "null", "true", "false", "0", "-0", "1.5e-3", "123456789012345678901234567890", "\"h\\u00e9llo \\ud83d\\ude00\"",
        "[]", "{}", "[1,[2,[3]]]", "{\"a\":{\"b\":[true,null]}}", " \t\n {\"x\" : 1 } ",
    ])
    func accepts(_ text: String) throws { _ = try JSONParser.parse(text) }

    @Test(arguments: [
        "", "nul", "01", "1.", "-", "+1", ".5", "1e", "[1,]", "{\"a\":1,}", "{a:1}", "'x'", "\"\\x\"", "\"\\ud800\"",
        "\"tab\there\"", "[1 2]", "{\"a\" 1}", "\"unterminated", "1 2", "[", "{\"a\":",
    ])
    func rejects(_ text: String) { #expect(throws: JSONError.self) { try JSONParser.parse(text) } }

    @Test func invalidUTF8IsRejected() {
        #expect(throws: JSONError.self) { try JSONParser.parse([0x22, 0xC3, 0x28, 0x22]) }
    }

    @Test func depthIsLimited() throws {
        _ = try JSONParser.parse(String(repeating: "[", count: 63) + String(repeating: "]", count: 63))
        #expect(throws: JSONError.self) { try JSONParser.parse(String(repeating: "[", count: 100_000)) }
    }

    @Test func numbersKeepTheirTextAndOrderIsKept() throws {
        let text = "{\"z\":1.10,\"a\":[1e300,-0,123456789012345678901234567890]}"
        let v = try JSONParser.parse(text)
        #expect(String(decoding: v.encoded, as: UTF8.self) == text)
    }

    /// A number past a double's range is Infinity to JavaScript and an error to Swift's
    /// JSONDecoder (a whole frame or history page refused over it): refused where Warren reads
    /// JSON. Before 2026-11-28 `1e999` was published and stored as given.
    @Test func numbersPastADoublesRangeAreRefused() {
        for text in ["1e400", "[-1e309]", "{\"n\":1.8e308}", "1" + String(repeating: "0", count: 309)] {
            #expect(throws: JSONError.self, "\(text)") { try JSONParser.parse(text) }
        }
        #expect(throws: ProtocolError.self) {
            try ClientFrame.parse(Array(#"{"op":"pub","route":"alice.bob","body":1e999}"#.utf8))
        }
    }

    @Test func stringsRoundTrip() throws {
        let s = "quote\" backslash\\ newline\n tab\t ctrl\u{01} emoji😀 é"
        var w = JSONWriter()
        w.string(s)
        #expect(try JSONParser.parse(w.bytes) == .string(s))
    }

    @Test func everyControlAndASCIICharacterRoundTripsInRunsAndAlone() throws {
        let all = String(decoding: (0..<128).map { UInt8($0) }, as: UTF8.self)
        for s in [all, "", "\"", "plain", "a\u{1f}", "\u{0}z", String(repeating: "ab\"", count: 300) + "é"] {
            var w = JSONWriter()
            w.string(s)
            #expect(try JSONParser.parse(w.bytes) == .string(s))
        }
        var w = JSONWriter()
        w.string("\u{01}\u{1f}\t")
        #expect(String(decoding: w.bytes, as: UTF8.self) == #""\u0001\u001f\t""#)
    }

    @Test func integersAreWrittenAsTheirDecimalText() {
        for v: Int64 in [0, 7, -7, 10, 1_763_726_400_123, .max, .min] {
            var w = JSONWriter()
            w.int(v)
            #expect(String(decoding: w.bytes, as: UTF8.self) == String(v))
        }
    }
}

@Suite struct UUIDv7Tests {
    @Test func formatVersionVariantAndOrder() {
        let g = UUIDv7Generator()
        var last = ""
        var seen = Set<String>()
        for k in 0..<5000 {
            let id = g.next(nowMilliseconds: 1_763_726_400_123 + UInt64(k / 100))
            #expect(id.count == 36)
            #expect(UUIDv7Generator.canonical(id) == id, "lower-case canonical")
            let chars = Array(id)
            #expect(chars[14] == "7")
            #expect("89ab".contains(chars[19]))
            #expect(id > last, "time-ordered")
            #expect(seen.insert(id).inserted, "unique")
            last = id
        }
        #expect(UUIDv7Generator().next(nowMilliseconds: 1_763_726_400_123).hasPrefix("019aa649-1a7b-7"), "48-bit big-endian milliseconds")
    }

    @Test func canonicalForm() {
        #expect(UUIDv7Generator.canonical("0196A3F2-7C1E-7B3A-9D2E-4F5A6B7C8D9E") == "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e")
        #expect(UUIDv7Generator.canonical("not-a-uuid") == nil)
        #expect(UUIDv7Generator.canonical("0196a3f27c1e7b3a9d2e4f5a6b7c8d9e0000") == nil)
    }
}

@Suite struct EnvelopeTests {
    static let sample = Envelope(id: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e", route: "alice.bob", type: "text", from: "alice", via: .ws,
                                 ts: 1_763_726_400_123, body: .string("hello"), cid: "c-42", transient: false,
                                 headers: [("lang", "en")])

    @Test func encodesInContractOrder() {
        let text = String(decoding: Self.sample.encoded(), as: UTF8.self)
        #expect(text == #"{"v":1,"id":"0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e","route":"alice.bob","type":"text","from":"alice","via":"ws","ts":1763726400123,"body":"hello","cid":"c-42","headers":{"lang":"en"}}"#)
    }

    @Test func fieldRules() throws {
        #expect(Envelope.isValidType("app:bill") && Envelope.isValidType("typing"))
        #expect(!Envelope.isValidType("") && !Envelope.isValidType("a b") && !Envelope.isValidType(String(repeating: "t", count: 65)))
        #expect(Envelope.isValidCID("c-1") && !Envelope.isValidCID("") && !Envelope.isValidCID("a\u{0}b"))
        let many = JSONValue.object((0..<33).map { (key: "h\($0)", value: .string("v")) })
        #expect(throws: EnvelopeError.badField("more than 32 headers")) { try Envelope.parseHeaders(many) }
        #expect(throws: EnvelopeError.self) { try Envelope.parseHeaders(.object([(key: "n", value: .number("1"))])) }
        #expect(try Envelope.parseHeaders(.object([(key: "a", value: .string("b"))])).count == 1)
    }
}

@Suite struct EnvelopeAMQPMappingTests {
    static let now: Int64 = 1_763_726_400_000
    static func translate(_ body: String, _ props: BasicProperties, key: String = "alice.bob") -> Envelope? {
        switch EnvelopeAMQPMapping.incoming(body: ByteBuffer(string: body), properties: props, routingKey: key,
                                            nowMilliseconds: now, newID: { "00000000-0000-7000-8000-000000000000" }) {
        case .translated(let e): return e
        case .passthrough: return nil
        }
    }

    @Test func publishProperties() {
        let p = EnvelopeAMQPMapping.properties(for: EnvelopeTests.sample)
        #expect(p.contentType == "application/json" && p.appID == "warren" && p.messageID == EnvelopeTests.sample.id)
        #expect(p.deliveryMode == 2 && p.expiration == nil && p.type == "text" && p.timestamp == 1_763_726_400)
        #expect(p.headers?["from"]?.stringValue == "alice" && p.headers?["via"]?.stringValue == "ws" && p.headers?["cid"]?.stringValue == "c-42")
        var t = EnvelopeTests.sample
        t.transient = true
        let tp = EnvelopeAMQPMapping.properties(for: t)
        #expect(tp.deliveryMode == 1 && tp.expiration == "0")
    }

    /// A back end names itself (`from` header, app id, an envelope body's `from`); a name with a
    /// control character is not believed, and the next one, or "amqp", is taken.
    @Test func aSenderNameWithAControlCharacterIsNotBelieved() {
        let nul = "back\u{0}end"
        #expect(Envelope.isValidSender("billing service") && !Envelope.isValidSender(nul) && !Envelope.isValidSender("")
                && !Envelope.isValidSender(String(repeating: "s", count: 256)))
        #expect(Self.translate("x", BasicProperties(headers: ["from": .string(nul)], appID: "billing"))?.from == "billing")
        #expect(Self.translate("x", BasicProperties(headers: ["from": .string(nul)], appID: "bad\u{7F}"))?.from == "amqp")
        #expect(Self.translate(#"{"v":1,"from":"back\u0000end","body":"hi"}"#, BasicProperties(appID: "crm"))?.from == "crm")
        #expect(Self.translate(#"{"v":1,"from":"Billing Service","body":"hi"}"#, BasicProperties())?.from == "Billing Service")
    }

    @Test func warrensOwnPublishesPassThrough() {
        let bytes = EnvelopeTests.sample.encoded()
        guard case .passthrough(let b) = EnvelopeAMQPMapping.incoming(
            body: ByteBuffer(bytes: bytes), properties: EnvelopeAMQPMapping.properties(for: EnvelopeTests.sample),
            routingKey: "alice.bob", nowMilliseconds: 0, newID: { "" }) else { Issue.record(); return }
        #expect(Array(b.readableBytesView) == bytes)
    }

    /// `app_id=warren` is a mark any AMQP publisher can set: only Warren's envelope for the
    /// message (JSON, its id the `message_id`, its route the routing key) passes through; anything
    /// else is translated like a plain AMQP client's message, into an envelope that is JSON.
    @Test func theMarkAloneDoesNotPassABodyThrough() throws {
        let sample = EnvelopeTests.sample
        let good = Array(sample.encoded())
        let text = String(decoding: good, as: UTF8.self)
        let props = EnvelopeAMQPMapping.properties(for: sample)
        var badUTF8 = good
        badUTF8.replaceSubrange(badUTF8.firstRange(of: Array("hello".utf8))!, with: [0x68, 0xFF, 0x6F])
        var otherID = props
        otherID.messageID = "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d00"
        var upperID = props
        upperID.messageID = sample.id.uppercased()
        var noID = props
        noID.messageID = nil
        let cases: [(body: [UInt8], properties: BasicProperties, key: String)] = [
            (Array("not JSON at all".utf8), props, "alice.bob"),
            (Array(text.replacingOccurrences(of: "hello", with: "hel\u{1}lo").utf8), props, "alice.bob"),
            (Array(good.dropLast()), props, "alice.bob"),
            (good + Array(" trailing".utf8), props, "alice.bob"),
            (badUTF8, props, "alice.bob"),
            (good, props, "alice.carol"),
            (good, otherID, "alice.bob"),
            (good, upperID, "alice.bob"),
            (good, noID, "alice.bob"),
        ]
        for (body, properties, key) in cases {
            let incoming = EnvelopeAMQPMapping.incoming(body: ByteBuffer(bytes: body), properties: properties, routingKey: key,
                                                        nowMilliseconds: Self.now, newID: { "00000000-0000-7000-8000-000000000000" })
            guard case .translated(let e) = incoming else {
                Issue.record("passed through: \(String(decoding: body, as: UTF8.self)) under \(key)")
                continue
            }
            #expect(e.route == key && e.via == .amqp)
            #expect((try? JSONParser.parse(e.encoded())) != nil)
        }
        guard case .passthrough = EnvelopeAMQPMapping.incoming(body: ByteBuffer(bytes: good), properties: props, routingKey: "alice.bob",
                                                               nowMilliseconds: 0, newID: { "" }) else { Issue.record(); return }
    }

    @Test func plainTextIsWrapped() throws {
        let e = try #require(Self.translate("hi bob", BasicProperties(type: "text", appID: "billing")))
        #expect(e.body == .string("hi bob") && e.type == "text" && e.from == "billing" && e.via == .amqp)
        #expect(e.route == "alice.bob" && e.ts == Self.now && e.id == "00000000-0000-7000-8000-000000000000")
    }

    @Test func jsonBodyAndPropertiesAreUsed() throws {
        let e = try #require(Self.translate("{\"amount\":12.50}", BasicProperties(
            contentType: "application/json", headers: ["from": "bot"], messageID: "0196A3F2-7C1E-7B3A-9D2E-4F5A6B7C8D9E", timestamp: 1_700_000_000)))
        #expect(e.body == .object([(key: "amount", value: .number("12.50"))]))
        #expect(e.from == "bot" && e.type == "raw" && e.id == "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e" && e.ts == 1_700_000_000_000)
    }

    /// A `timestamp` whose milliseconds do not fit is no time: Warren's clock stands in (it
    /// wrapped around to a negative `ts` before).
    @Test func aTimestampTooLargeForMillisecondsIsReplacedByWarrensClock() throws {
        for nonsense: UInt64 in [UInt64.max, UInt64(Int64.max), UInt64(Int64.max) / 1000 + 1] {
            let e = try #require(Self.translate("hi", BasicProperties(timestamp: nonsense)))
            #expect(e.ts == Self.now, "timestamp \(nonsense)")
        }
        #expect(EnvelopeAMQPMapping.acceptedAt(BasicProperties(timestamp: UInt64.max)) == nil)
        #expect(EnvelopeAMQPMapping.acceptedAt(BasicProperties(timestamp: 1_700_000_000)) == 1_700_000_000_000)
    }

    @Test func binaryIsBase64() throws {
        let e = try #require(EnvelopeAMQPMapping.incoming(body: ByteBuffer(bytes: [0xFF, 0x00, 0xFE]), properties: BasicProperties(),
                                                          routingKey: "a", nowMilliseconds: 1, newID: { "x" }).envelope)
        #expect(e.body == .object([(key: "base64", value: .string("/wD+"))]))
        #expect(e.from == "amqp")
        #expect(EnvelopeAMQPMapping.base64(Array("hello".utf8)) == "aGVsbG8=")
        // Valid UTF-8 is text; anything invalid (however it would be repaired) is not.
        for valid in ["", "plain", "é😀\u{0}", String(repeating: "ü", count: 500)] {
            #expect(EnvelopeAMQPMapping.text(ByteBuffer(string: valid).readableBytesView) == valid)
        }
        for invalid: [UInt8] in [[0xFF], [0xC3], [0xE0, 0xA0], [0xED, 0xA0, 0x80], [0x61, 0xF4, 0x90, 0x80, 0x80], [0xC0, 0xAF],
                                 [0xEF, 0xBF, 0xBD, 0xFF]] {
            #expect(EnvelopeAMQPMapping.text(ByteBuffer(bytes: invalid).readableBytesView) == nil)
        }
    }

    @Test func anEnvelopeBodyKeepsItsFields() throws {
        let body = #"{"v":1,"type":"app:bill","from":"bot","route":"elsewhere","via":"ws","body":{"ticket":"T-1"},"cid":"b1"}"#
        let e = try #require(Self.translate(body, BasicProperties(contentType: "application/json")))
        #expect(e.type == "app:bill" && e.from == "bot" && e.via == .amqp && e.route == "alice.bob" && e.cid == "b1")
        #expect(e.body == .object([(key: "ticket", value: .string("T-1"))]))
        #expect(e.ts == Self.now)
    }

    @Test func invalidJSONWithJSONContentTypeFallsBackToText() throws {
        let e = try #require(Self.translate("{oops", BasicProperties(contentType: "application/json")))
        #expect(e.body == .string("{oops"))
    }
}

extension EnvelopeAMQPMapping.Incoming {
    var envelope: Envelope? { if case .translated(let e) = self { return e } else { return nil } }
}

@Suite struct DedupCacheTests {

    @Test func anUnconfirmedSendsIDsAreRememberedUntilOneIsConfirmed() {
        var c = DedupCache(ttlMilliseconds: 1000, capacity: 10)
        c.rememberAttempt(from: "alice", cid: "c1", routes: ["a.b", "a.c"], ids: ["i1", "i2"], nowMilliseconds: 0)
        #expect(c.earlier(from: "alice", cid: "c1", nowMilliseconds: 1) == .attempted(["a.b": "i1", "a.c": "i2"]))
        #expect(c.lookup(from: "alice", cid: "c1", nowMilliseconds: 1) == nil, "not confirmed: not answered from the cache")
        c.remember(from: "alice", cid: "c1", ids: ["i1", "i2"], nowMilliseconds: 2)
        c.rememberAttempt(from: "alice", cid: "c1", routes: ["a.b"], ids: ["i9"], nowMilliseconds: 3)
        #expect(c.earlier(from: "alice", cid: "c1", nowMilliseconds: 4) == .confirmed(["i1", "i2"]), "a confirmed send stays so")
        #expect(c.earlier(from: "alice", cid: "c1", nowMilliseconds: 1000) == nil)
    }
    @Test func remembersForTheTTLThenForgets() {
        var c = DedupCache(ttlMilliseconds: 1000, capacity: 10)
        c.remember(from: "alice", cid: "c1", ids: ["id1"], nowMilliseconds: 0)
        #expect(c.lookup(from: "alice", cid: "c1", nowMilliseconds: 999) == ["id1"])
        #expect(c.lookup(from: "bob", cid: "c1", nowMilliseconds: 10) == nil, "per sender")
        #expect(c.lookup(from: "alice", cid: "c1", nowMilliseconds: 1000) == nil)
        #expect(c.count == 0)
    }

    @Test func boundedByCapacity() {
        var c = DedupCache(ttlMilliseconds: 1_000_000, capacity: 100)
        for i in 0..<1000 { c.remember(from: "u", cid: "c\(i)", ids: ["\(i)"], nowMilliseconds: Int64(i)) }
        #expect(c.count <= 100)
        #expect(c.lookup(from: "u", cid: "c999", nowMilliseconds: 1000) == ["999"])
        #expect(c.lookup(from: "u", cid: "c0", nowMilliseconds: 1000) == nil)
    }
}
