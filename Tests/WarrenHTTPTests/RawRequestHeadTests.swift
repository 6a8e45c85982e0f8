import NIOCore
import Testing
@testable import WarrenHTTP

@Suite("The poll path's request parser")
struct RawRequestHeadTests {
    func parse(_ text: String) -> RawRequestHead.Parse {
        RawRequestHead.parse(ByteBuffer(string: text).readableBytesView)
    }

    @Test func readsAPollAndTheFieldsItNeeds() throws {
        let text = "GET /v1/poll/abc?wait=25&max=10 HTTP/1.1\r\nHost: x\r\nAUTHORIZATION:  Bearer t0k \r\nConnection: keep-alive\r\n\r\nGET /next"
        guard case .head(let head) = parse(text) else { Issue.record("not a head"); return }
        #expect(head.method == .get)
        #expect(head.target == "/v1/poll/abc?wait=25&max=10")
        #expect(head.authorization == "Bearer t0k")
        #expect(!head.close && !head.hasOrigin)
        #expect(head.contentLength == 0)
        #expect(head.length == text.utf8.count - "GET /next".utf8.count)
    }

    @Test func readsABodyLengthCloseAndOrigin() {
        guard case .head(let head) = parse("POST /v1/poll HTTP/1.1\r\nContent-Length: 42\r\norigin: http://a\r\nconnection: Close\r\n\r\n") else {
            Issue.record("not a head")
            return
        }
        #expect(head.method == .post && head.contentLength == 42 && head.close && head.hasOrigin)
    }

    @Test func readsAnExpectationOfContinue() {
        guard case .head(let head) = parse("POST /v1/messages HTTP/1.1\r\nEXPECT: 100-Continue \r\nContent-Length: 2\r\n\r\n") else {
            Issue.record("not a head")
            return
        }
        #expect(head.expectsContinue && head.contentLength == 2)
        guard case .head(let plain) = parse("POST /v1/messages HTTP/1.1\r\nContent-Length: 2\r\n\r\n") else {
            Issue.record("not a head")
            return
        }
        #expect(!plain.expectsContinue)
    }

    /// An HTTP/1.0 request (nginx's default to its upstreams) is taken too, and closes after
    /// its answer whatever its Connection field says.
    @Test func http10IsTakenAndCloses() {
        for text in ["GET /v1/poll/a?wait=5 HTTP/1.0\r\n\r\n", "GET /v1/poll/a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
                     "POST /v1/messages HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}"] {
            guard case .head(let head) = parse(text) else { Issue.record("not taken: \(text)"); continue }
            #expect(head.close, "\(text)")
        }
        guard case .head(let kept) = parse("GET /v1/poll/a HTTP/1.1\r\nHost: x\r\n\r\n") else { Issue.record("1.1"); return }
        #expect(!kept.close)
    }

    @Test func waitsForTheBlankLine() {
        #expect(parse("GET /v1/poll/abc HTTP/1.1\r\nHost: x\r\n") == .incomplete)
        #expect(parse("GET /v1/po") == .incomplete)
    }

    /// Whatever it is not sure of goes to the full parser (which answers or refuses it).
    @Test(arguments: [
        "GET /v1/poll/a HTTP/2.0\r\n\r\n",
        "GET /v1/ws HTTP/1.0\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: a2V5\r\nSec-WebSocket-Version: 13\r\n\r\n",
        "POST /v1/messages HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n",
        "GET /v1/poll/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST /v1/poll HTTP/1.1\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n",
        "POST /v1/poll HTTP/1.1\r\nExpect: 100-continue\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n",
        "GET /v1/ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        "GET /v1/ws HTTP/1.1\r\nUpgrade: h2c\r\nConnection: Upgrade\r\nSec-WebSocket-Key: a2V5\r\nSec-WebSocket-Version: 13\r\n\r\n",
        "GET /v1/ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: a2V5\r\nSec-WebSocket-Version: 8\r\n\r\n",
        "GET /v1/ws HTTP/1.1\r\nUpgrade: websocket\r\nSec-WebSocket-Key: a2V5\r\nSec-WebSocket-Version: 13\r\n\r\n",
        "POST /v1/ws HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: a2V5\r\nSec-WebSocket-Version: 13\r\n\r\n",
        "GET /v1/ws HTTP/1.1\r\nUpgrade: websocket\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: a2V5\r\nSec-WebSocket-Version: 13\r\n\r\n",
        "GET /v1/poll/a HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
        "GET /v1/poll/a HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        "GET /v1/poll/a HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
        "GET /v1/poll/a HTTP/1.1\r\n folded: line\r\n\r\n",
        "GET /v1/poll/a HTTP/1.1\r\nno colon\r\n\r\n",
        "GET /v1/poll/a HTTP/1.1\r\nBad Name: x\r\n\r\n",
        "GET /v1/poll/a HTTP/1.1\r\nX: a\u{01}b\r\n\r\n",
        "GET /v1/poll/a HTTP/1.1\r\nX: a\nY: b\r\n\r\n",
        "GET  HTTP/1.1\r\n\r\n",
        "GET v1/poll HTTP/1.1\r\n\r\n",
        "G(T /v1/poll/a HTTP/1.1\r\n\r\n",
        "GET /v1/poll/a\u{7f} HTTP/1.1\r\n\r\n",
        "\r\n\r\n",
        // Found by the agreement test with NIO's parser: a bare CR taken as a line end, a tab in a length.
        "GET /v1/poll/a HTTP/1.1\rHost: x\r\n\r\n",
        "GET /v1/poll/a HTTP/1.1\r\nHost: x\rOrigin: y\r\n\r\n",
        "POST /v1/poll HTTP/1.1\r\nContent-Length: 1\t\r\n\r\nx",
        "GET /v1/poll/a HTTP/1.1\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n",
        // Bare LF line ends: no CR LF CR LF will ever come, so not left waiting for one.
        "GET /v1/poll/a HTTP/1.1\nHost: x\n\n",
        "GET /v1/poll/a HTTP/1.1\r\nHost: x\n",
        // Not HTTP from the first byte: a TLS ClientHello's record header, handed on at once.
        "\u{16}\u{03}\u{01}\u{02}",
    ])
    func handsOnWhatItIsNotSureOf(_ text: String) {
        #expect(parse(text) == .other)
    }

    @Test func readsAWebSocketHandshake() {
        let text = "GET /v1/ws?user=a HTTP/1.1\r\nHost: x\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: http://a\r\n\r\n"
        guard case .head(let head) = parse(text) else { Issue.record("not a head"); return }
        #expect(head.method == .get && head.target == "/v1/ws?user=a" && head.hasOrigin)
        #expect(head.webSocketKey == "dGhlIHNhbXBsZSBub25jZQ==")
        guard case .head(let poll) = parse("GET /v1/poll/a HTTP/1.1\r\n\r\n") else { Issue.record("not a head"); return }
        #expect(poll.webSocketKey == nil)
    }

    @Test func aHeadOverTheLimitIsHandedOn() {
        let long = "GET /v1/poll/a HTTP/1.1\r\nX: " + String(repeating: "a", count: 20_000)
        #expect(parse(long) == .other)
        let fields = "GET /v1/poll/a HTTP/1.1\r\n" + String(repeating: "X: y\r\n", count: 101) + "\r\n"
        #expect(parse(fields) == .other)
    }

    /// A request line longer than a whole head is answered here (414), not handed on to a parser
    /// that answers it a bare 400; one that ends within the limit is read as usual.
    @Test func aRequestLineOverTheLimitIsTooLong() {
        let line = "GET /v1/poll/" + String(repeating: "a", count: 20_000)
        #expect(parse(line) == .uriTooLong)
        #expect(parse(line + " HTTP/1.1\r\nHost: x\r\n\r\n") == .uriTooLong)
        #expect(parse("GET /v1/poll/" + String(repeating: "a", count: 100)) == .incomplete)
        #expect(PollConnectionHandler.responseHead(status: 414, length: 0, close: true).readableBytesView.starts(with: "HTTP/1.1 414 URI Too Long\r\n".utf8))
    }

    @Test func theResponseHeadIsPlainHTTP() {
        let head = PollConnectionHandler.responseHead(status: 503, length: 12, close: true)
        #expect(String(buffer: head) == "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: 12\r\nconnection: close\r\n\r\n")
    }
}
