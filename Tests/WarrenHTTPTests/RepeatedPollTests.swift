import NIOCore
import Testing
@testable import WarrenHTTP

@Suite("A poll repeated on its connection, known by its bytes")
struct RepeatedPollTests {
    static let first = "GET /v1/poll/eyJ.abc.sig?user=alice&wait=30&ack=node-1.7 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer t\r\n\r\n"

    func template(_ head: String) -> RepeatedPoll? {
        Array(head.utf8).withUnsafeBytes { RepeatedPoll(head: $0) }
    }

    func match(_ template: RepeatedPoll, _ bytes: String) -> (length: Int, ack: String?)? {
        let bytes = Array(bytes.utf8)
        return bytes.withUnsafeBytes { raw in
            template.match(raw).map { found in (found.length, found.ack.map { String(decoding: bytes[$0], as: UTF8.self) }) }
        }
    }

    func head(_ text: String) -> RawRequestHead? {
        guard case .head(let head) = RawRequestHead.parse(ByteBuffer(string: text).readableBytesView) else { return nil }
        return head
    }

    @Test func takesTheSamePollWithAnotherCursor() throws {
        let t = try #require(template(Self.first))
        #expect(t.hasAck)
        let next = "GET /v1/poll/eyJ.abc.sig?user=alice&wait=30&ack=node-1.1234567 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer t\r\n\r\n"
        let found = try #require(match(t, next + "GET /v1/poll/pipelined"))
        #expect(found.length == next.utf8.count)
        #expect(found.ack == "node-1.1234567")
        // What the parser makes of it is the first head's reading with that cursor.
        let parsed = try #require(head(next)), kept = try #require(head(Self.first))
        #expect(parsed.length == found.length)
        #expect(Query(target: parsed.target).items["ack"] == found.ack)
        for name in ["user", "wait", "max", "token", "device"] {
            #expect(Query(target: parsed.target).items[name] == Query(target: kept.target).items[name])
        }
        #expect(parsed.authorization == kept.authorization && parsed.close == kept.close && parsed.contentLength == 0)
    }

    @Test func takesAnEmptyAndAnUnchangedCursor() throws {
        let t = try #require(template(Self.first))
        #expect(match(t, Self.first)?.ack == "node-1.7")
        #expect(match(t, Self.first.replacingOccurrences(of: "ack=node-1.7", with: "ack="))?.ack == "")
    }

    @Test func refusesAnyOtherChange() throws {
        let t = try #require(template(Self.first))
        let changed = [
            Self.first.replacingOccurrences(of: "sig?", with: "sih?"),            // another session
            Self.first.replacingOccurrences(of: "wait=30", with: "wait=31"),
            Self.first.replacingOccurrences(of: "Bearer t", with: "Bearer u"),
            Self.first.replacingOccurrences(of: "\r\n\r\n", with: "\r\nConnection: close\r\n\r\n"),
            Self.first.replacingOccurrences(of: "ack=node-1.7", with: "ack=node-1.7&max=1"),
            Self.first.replacingOccurrences(of: "ack=node-1.7", with: "ack=node%2D1.7"),  // encoded: the query's to decode
            Self.first.replacingOccurrences(of: "ack=node-1.7", with: "ack=node+1.7"),
            // A cursor smuggling a line end cannot end the request line early.
            Self.first.replacingOccurrences(of: "ack=node-1.7", with: "ack=1\r\nX:"),
            Self.first.replacingOccurrences(of: "ack=node-1.7", with: "ack=" + String(repeating: "9", count: RepeatedPoll.maxAckBytes + 1)),
            String(Self.first.dropLast(2)),                                            // not all there yet
            "POST" + Self.first.dropFirst(3),
        ]
        for text in changed { #expect(match(t, text) == nil, "\(text.debugDescription)") }
    }

    @Test func withoutACursorTheWholeHeadIsCompared() throws {
        let plain = "GET /v1/poll/s?user=bob&wait=20 HTTP/1.1\r\nHost: h\r\n\r\n"
        let t = try #require(template(plain))
        #expect(!t.hasAck)
        #expect(match(t, plain + "GET")?.length == plain.utf8.count)
        #expect(match(t, plain)?.ack == nil)
        #expect(match(t, plain.replacingOccurrences(of: "wait=20", with: "wait=20&ack=n.1")) == nil)
        let noQuery = "GET /v1/poll/s HTTP/1.1\r\nHost: h\r\n\r\n"
        #expect(try #require(template(noQuery)).hasAck == false)
    }

    @Test func aQueryItCannotCompareByteForByteIsNotKept() {
        #expect(template("GET /v1/poll/s?user=b%6Fb&ack=n.1 HTTP/1.1\r\n\r\n") == nil)
        #expect(template("GET /v1/poll/s?user=b+b&ack=n.1 HTTP/1.1\r\n\r\n") == nil)
        #expect(template("GET /v1/poll/s?ack&ack=n.1 HTTP/1.1\r\n\r\n") == nil)
        #expect(template("GET /v1/poll/s?ack=n%2E1 HTTP/1.1\r\n\r\n") == nil)
        // Past the cursor, anything: compared whole.
        #expect(template("GET /v1/poll/s?ack=n.1&x=%41 HTTP/1.1\r\n\r\n")?.hasAck == true)
    }
}
