import NIOCore
import Testing
@testable import WarrenHTTP

@Suite("The edge's request head reader")
struct RawRequestHeadTests {
    func parse(_ text: String) -> RawRequestHead.Parse {
        RawRequestHead.parse(ByteBuffer(string: text).readableBytesView)
    }

    func head(_ text: String) -> RawRequestHead? {
        guard case .head(let head) = parse(text) else { return nil }
        return head
    }

    func status(_ text: String) -> Int? {
        guard case .refused(let refusal) = parse(text) else { return nil }
        return refusal.status
    }

    @Test func readsAPollAndTheFieldsItNeeds() throws {
        let text = "GET /v1/poll/abc?wait=25&max=10 HTTP/1.1\r\nHost: x\r\nAUTHORIZATION:  Bearer t0k \r\nConnection: keep-alive\r\n\r\nGET /next"
        let head = try #require(self.head(text))
        #expect(head.method == .get)
        #expect(head.target == "/v1/poll/abc?wait=25&max=10")
        #expect(head.authorization == "Bearer t0k")
        #expect(!head.close && head.origin == nil && !head.hasBody && head.webSocket == nil)
        #expect(head.length == text.utf8.count - "GET /next".utf8.count)
    }

    @Test func readsABodyLengthCloseAndOrigin() throws {
        let head = try #require(self.head("POST /v1/poll HTTP/1.1\r\nHost: x\r\nContent-Length: 42\r\norigin: http://a\r\nconnection: Close\r\n\r\n"))
        #expect(head.method == .post && head.contentLength == 42 && head.close && head.origin == "http://a" && head.hasBody)
    }

    @Test func readsAChunkedBody() throws {
        let head = try #require(self.head("POST /v1/messages HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:  Chunked \r\n\r\n"))
        #expect(head.chunked && head.contentLength == 0 && head.hasBody)
    }

    @Test func readsAnExpectationOfContinue() throws {
        let head = try #require(self.head("POST /v1/messages HTTP/1.1\r\nHost: x\r\nEXPECT: 100-Continue \r\nContent-Length: 2\r\n\r\n"))
        #expect(head.expectsContinue && head.contentLength == 2)
        #expect(self.head("POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n")?.expectsContinue == false)
        // HTTP/1.0 has no 100 Continue: the expectation is ignored (RFC 9110 §10.1.1).
        #expect(self.head("POST /v1/messages HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")?.expectsContinue == false)
    }

    /// An HTTP/1.0 request (nginx's default to its upstreams) is served, needs no Host, and
    /// closes after its answer whatever its Connection field says.
    @Test func http10IsServedAndCloses() {
        for text in ["GET /v1/poll/a?wait=5 HTTP/1.0\r\n\r\n", "GET /v1/poll/a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
                     "POST /v1/messages HTTP/1.0\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"] {
            #expect(head(text)?.close == true, "\(text)")
        }
        #expect(head("GET /v1/poll/a HTTP/1.1\r\nHost: x\r\n\r\n")?.close == false)
    }

    @Test func waitsForTheBlankLine() {
        #expect(parse("GET /v1/poll/abc HTTP/1.1\r\nHost: x\r\n") == .incomplete)
        #expect(parse("GET /v1/po") == .incomplete)
        #expect(parse("") == .incomplete)
        #expect(parse("GET / HTTP/1.1\r\nHost: x\r\n\r") == .incomplete)
    }

    /// Empty lines before a request line are skipped (RFC 9112 §2.2), and belong to the head:
    /// its length, and its time (the state machine's head timeout).
    @Test func emptyLinesBeforeTheHeadArePartOfIt() throws {
        #expect(parse("\r\n\r\n") == .incomplete)
        #expect(parse("\r\n\r\nGET") == .incomplete)
        let text = "\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        let head = try #require(self.head(text))
        #expect(head.target == "/healthz" && head.length == text.utf8.count)
    }

    /// RFC 9112 §3.2: exactly one Host in HTTP/1.1 (400 otherwise), at most one in HTTP/1.0.
    @Test func http11NeedsExactlyOneHost() {
        #expect(status("GET / HTTP/1.1\r\n\r\n") == 400)
        #expect(status("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n") == 400)
        #expect(status("GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n") == 400)
        #expect(head("GET / HTTP/1.1\r\nHOST: a\r\n\r\n") != nil)
    }

    /// A proxy's absolute-form target is read as the path and query it names (RFC 9112 §3.2.2).
    @Test func anAbsoluteTargetIsReadAsItsPath() {
        #expect(head("GET http://warren.example:8080/v1/poll/a?wait=1 HTTP/1.1\r\nHost: x\r\n\r\n")?.target == "/v1/poll/a?wait=1")
        #expect(head("GET HTTPS://warren.example HTTP/1.1\r\nHost: x\r\n\r\n")?.target == "/")
        #expect(head("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n")?.target == "*")
        #expect(status("GET * HTTP/1.1\r\nHost: x\r\n\r\n") == 400)
        #expect(status("GET ftp://x/a HTTP/1.1\r\nHost: x\r\n\r\n") == 400)
    }

    /// Whatever HTTP/1.1 does not allow is refused with the status a server owes it, at once
    /// (not left waiting for the head timeout), so it can never be framed two ways.
    @Test(arguments: [
        ("GET /v1/poll/a HTTP/2.0\r\nHost: x\r\n\r\n", 400),
        ("BREW /v1/stats HTTP/1.1\r\nHost: x\r\n\r\n", 501),
        ("GET /v1/poll/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
        ("GET /v1/poll/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("POST /v1/messages HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        ("POST /v1/poll HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n", 417),
        ("POST /v1/poll HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n", 417),
        ("GET /v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", 400),
        ("GET /v1/poll/a HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", 400),
        ("GET /v1/poll/a HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 400),
        ("GET /v1/poll/a HTTP/1.1\r\nHost: x\r\nContent-Length: +1\r\n\r\n", 400),
        ("GET /v1/poll/a HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n", 413),
        ("GET /v1/poll/a HTTP/1.1\r\nHost: x\r\n folded: line\r\n\r\n", 400),
        ("GET /v1/poll/a HTTP/1.1\r\nHost: x\r\nX: a\r\n\tcontinued\r\n\r\n", 400),
        ("GET /v1/poll/a HTTP/1.1\r\nHost: x\r\nno colon\r\n\r\n", 400),
        ("GET /v1/poll/a HTTP/1.1\r\nHost: x\r\nBad Name: x\r\n\r\n", 400),
        ("GET /v1/poll/a HTTP/1.1\r\nHost: x\r\nX: a\u{01}b\r\n\r\n", 400),
        ("GET /v1/poll/a HTTP/1.1\r\nHost: x\r\nX: a\nY: b\r\n\r\n", 400),
        ("GET  HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET v1/poll HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("G(T /v1/poll/a HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        ("GET /v1/poll/a\u{7f} HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        // A bare CR taken as a line end, a tab in a length (found by the agreement test with NIO's parser).
        ("GET /v1/poll/a HTTP/1.1\rHost: x\r\n\r\n", 400),
        ("GET /v1/poll/a HTTP/1.1\r\nHost: x\rOrigin: y\r\n\r\n", 400),
        ("POST /v1/poll HTTP/1.1\r\nHost: x\r\nContent-Length: 1\t\r\n\r\nx", 400),
        ("GET /v1/poll/a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n", 400),
        ("GET /v1/ws HTTP/1.1\r\nHost: x\r\nSec-WebSocket-Key: a\r\nSec-WebSocket-Key: b\r\n\r\n", 400),
        // Bare LF line ends: no CR LF CR LF will ever come, so refused now.
        ("GET /v1/poll/a HTTP/1.1\nHost: x\n\n", 400),
        ("GET /v1/poll/a HTTP/1.1\r\nHost: x\n", 400),
        ("\n", 400),
        // Not HTTP from the first byte: a TLS ClientHello's record header.
        ("\u{16}\u{03}\u{01}\u{02}", 400),
    ])
    func refusesWhatHTTPDoesNotAllow(_ text: String, _ expected: Int) {
        #expect(status(text) == expected, "\(text.debugDescription)")
    }

    @Test func readsAWebSocketHandshake() throws {
        let text = "GET /v1/ws?user=a HTTP/1.1\r\nHost: x\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: http://a\r\n\r\n"
        let head = try #require(self.head(text))
        #expect(head.method == .get && head.target == "/v1/ws?user=a" && head.origin == "http://a")
        #expect(head.webSocket == RawRequestHead.WebSocketAsk(upgrade: true, connection: true, key: "dGhlIHNhbXBsZSBub25jZQ==", version: "13"))
        #expect(self.head("GET /v1/poll/a HTTP/1.1\r\nHost: x\r\n\r\n")?.webSocket == nil)
        // Another protocol's upgrade, or a key alone, is not a WebSocket handshake: served as a plain request.
        #expect(self.head("GET /v1/ws HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n")?.webSocket == nil)
        #expect(self.head("GET /v1/ws HTTP/1.1\r\nHost: x\r\nSec-WebSocket-Key: a2V5\r\n\r\n")?.webSocket == nil)
    }

    @Test func aHeadOverTheLimitIsRefused431() {
        let long = "GET /v1/poll/a HTTP/1.1\r\nX: " + String(repeating: "a", count: 20_000)
        #expect(status(long) == 431)
        let fields = "GET /v1/poll/a HTTP/1.1\r\nHost: x\r\n" + String(repeating: "X: y\r\n", count: 100) + "\r\n"
        #expect(status(fields) == 431)
        #expect(status(String(repeating: "\r\n", count: 9_000)) == 431)
    }

    /// A request line longer than a whole head is answered 414 (the URL is what is too long).
    @Test func aRequestLineOverTheLimitIsTooLong() {
        let line = "GET /v1/poll/" + String(repeating: "a", count: 20_000)
        #expect(status(line) == 414)
        #expect(status(line + " HTTP/1.1\r\nHost: x\r\n\r\n") == 414)
        #expect(parse("GET /v1/poll/" + String(repeating: "a", count: 100)) == .incomplete)
    }
}
