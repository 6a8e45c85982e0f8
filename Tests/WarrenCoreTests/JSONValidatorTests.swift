import Testing
@testable import WarrenCore

/// The validator must say yes exactly where the parser does: it stands in for the parser on the
/// delivery path, and the parser is the oracle.
@Suite struct JSONValidatorTests {
    static func agree(_ bytes: [UInt8]) -> (validator: Bool, parser: Bool) {
        (JSONValidator.isValid(bytes), (try? JSONParser.parse(bytes)) != nil)
    }

    static let valid: [String] = [
        #"{}"#, #"[]"#, #" {"a" : [1, -2.5e+3, true, false, null, "x"]} "#, #""just a string""#, "0", "-0.0e-0", "12",
        #"{"v":1,"body":{"k":[{},[],""]}}"#, #""\u00e9\ud83d\ude00\n\t\"\\\/\b\f\r""#, "\"é😀\"", "\"\\u0000\"",
        String(repeating: "[", count: 64) + String(repeating: "]", count: 64),
        String(repeating: "[", count: 63) + "1" + String(repeating: "]", count: 63),
        // Numbers a double holds, however they are written: exact text is kept, clients round.
        "1e308", "-1.7976931348623157e308", "1.7976931348623157E+308", "123456789012345678901234567890", "1e-999",
        "0.000001e309", "0e99999999999999999999", String(repeating: "9", count: 308), "-" + String(repeating: "1", count: 309),
    ]

    static let invalid: [[UInt8]] = [
        "", " ", "{", "}", "[1,]", #"{"a":1,}"#, "{,}", #"{"a" 1}"#, "{1:2}", "[1 2]", "01", "1.", ".5", "1e", "-", "+1",
        "tru", "nulll", "[1]x", #""abc"#, #""\x""#, #""\u12g4""#, #""\ud83d""#, #""\ude00""#, #""\ud83d\u0041""#,
        "\"a\u{1}b\"", "\"tab\there\"", String(repeating: "[", count: 65) + String(repeating: "]", count: 65),
        String(repeating: "[", count: 64) + "1" + String(repeating: "]", count: 64), #"{"a":1}}"#, "[]]", "[}", "{]",
        // Past a double's range: Infinity to JavaScript, an error to Swift's JSONDecoder.
        "1e999", "-1e309", "1.8e308", #"{"n":[1e99999999999999999999]}"#, "1" + String(repeating: "0", count: 309),
    ].map { Array($0.utf8) } + [
        [0x22, 0xC0, 0x80, 0x22],              // overlong NUL
        [0x22, 0xE0, 0x80, 0x80, 0x22],        // overlong three-byte form
        [0x22, 0xED, 0xA0, 0x80, 0x22],        // a surrogate in UTF-8
        [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // above U+10FFFF
        [0x22, 0xC3, 0x22],                    // cut short
        [0x22, 0xE2, 0x82, 0x22],              // cut short
        [0x22, 0x80, 0x22],                    // a continuation byte alone
        [0x22, 0xFF, 0x22], [0xEF, 0xBB, 0xBF, 0x7B, 0x7D],  // not UTF-8; a byte-order mark
    ]

    @Test func agreesWithTheParserOnHandPickedCases() {
        for text in Self.valid {
            #expect(Self.agree(Array(text.utf8)) == (true, true), "\(text)")
        }
        for bytes in Self.invalid {
            #expect(Self.agree(bytes) == (false, false), "\(bytes)")
        }
    }

    /// Envelopes with bytes flipped, inserted, removed and cut: wherever the parser says yes or
    /// no, the validator says the same.
    @Test func agreesWithTheParserOnMutatedEnvelopes() {
        var rng = Lcg(state: 0x5EED)
        let seeds: [[UInt8]] = [
            Envelope(id: "0196a3f2-7c1e-7b3a-9d2e-4f5a6b7c8d9e", route: "alice.bob", type: "text", from: "alice", via: .ws, ts: 1,
                     body: .object([(key: "t", value: .string("hé \"😀\"\n")), (key: "n", value: .array([.number("-1.5e3"), .bool(true), .null]))]),
                     cid: "c-1", transient: false, headers: [("lang", "en")]).encoded(),
            Array(#"{"a":[[{"b":"\ud83d\ude00"}],-0.1E+2,"\u00e9"]}"#.utf8),
        ]
        let interesting: [UInt8] = Array(#"{}[]",:\ u0123456789abcdefABCDEF.-+eEtrufalsn"#.utf8) + [0x00, 0x1F, 0x7F, 0x80, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0,
                                                                                                0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF]
        var agreed = 0, parsed = 0
        for round in 0..<20_000 {
            var bytes = seeds[round % seeds.count]
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let at = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: bytes[at] = interesting.randomElement(using: &rng)!
                case 1: bytes.insert(interesting.randomElement(using: &rng)!, at: at)
                case 2: bytes.remove(at: at)
                default: bytes = Array(bytes[..<at])
                }
                if bytes.isEmpty { break }
            }
            let (v, p) = Self.agree(bytes)
            #expect(v == p, "validator \(v), parser \(p): \(String(decoding: bytes, as: UTF8.self)) \(bytes)")
            if v == p { agreed += 1 }
            if p { parsed += 1 }
        }
        // Both answers occur often enough to mean something.
        #expect(agreed == 20_000 && parsed > 1_000 && parsed < 19_000, "\(parsed) of 20,000 parsed")
    }
}
