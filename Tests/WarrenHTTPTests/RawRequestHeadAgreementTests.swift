import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing
import TestSupport
@testable import WarrenHTTP

/// The edge reads every request's head by hand (``RawRequestHead``) and frames its body
/// (`Content-Length`, or chunks through ``ChunkedBody``). A proxy in front of Warren frames
/// requests with a parser of its own: wherever the two disagree, a request could be framed one
/// way there and another way here (a body read as the next request: smuggling). So every
/// request the edge takes must be framed the same way by a well-kept parser, NIO's (llhttp's).
/// Checked on thousands of requests made by mutating valid ones byte by byte, from a fixed seed.
@Suite("The raw request reader agrees with NIO's HTTP/1 parser")
struct RawRequestHeadAgreementTests {
    static let seeds = [
        "GET /v1/poll/abc?wait=25&max=10&user=u HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "POST /v1/poll HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"a\":\"bcde\"}",
        "POST /v1/messages?user=a HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nConnection: close\r\nAuthorization: Bearer t\r\n\r\n{}",
        "GET /v1/ws?user=a HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        "DELETE /v1/poll/abc HTTP/1.1\r\nHost: h\r\nOrigin: http://a\r\nX-Thing:\tv \r\n\r\n",
        "POST /v1/messages HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n3\r\n!!!\r\n0\r\nT: v\r\n\r\n",
        "GET /v1/poll/abc?wait=25 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    ]
    /// Bytes a mutation inserts or substitutes: the ones HTTP framing turns on, and some it forbids.
    static let alphabet: [UInt8] = Array(" \t\r\n:;,/?=&%+-_.0123456789aAzZ\u{7f}".utf8) + [0, 1, 0x80, 0xff]
    static let names = ["Content-Length", "Transfer-Encoding", "content-length", "Expect", "Connection", "Upgrade", "Host", " Host", "Host ",
                        "transfer-encoding"]

    @Test func onEveryHeadItTakes() throws {
        var rng = SplitMix(seed: 0x5eed_cafe)
        var taken = 0
        for round in 0..<6_000 {
            var bytes = Array(Self.seeds[round % Self.seeds.count].utf8)
            for _ in 0...(rng.next() % 4) { Self.mutate(&bytes, &rng) }
            guard case .head(let head) = RawRequestHead.parse(ByteBuffer(bytes: bytes).readableBytesView) else { continue }
            taken += 1
            try Self.expectAgreement(head, bytes)
        }
        // The mutations must leave many heads the reader takes, or the check checks nothing.
        #expect(taken > 1_000)
    }

    static func mutate(_ bytes: inout [UInt8], _ rng: inout SplitMix) {
        let at = Int(rng.next() % UInt64(bytes.count + 1))
        switch rng.next() % 5 {
        case 0 where at < bytes.count:
            bytes[at] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
        case 1:
            bytes.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: at)
        case 2 where at < bytes.count:
            bytes.remove(at: at)
        case 3:
            // A whole field after the request line.
            guard let lineEnd = bytes.firstIndex(of: 10) else { return }
            let value = ["5", "0", "chunked", "close", "1, 2", "+3", "", " 7 ", "100-continue", "gzip, chunked"][Int(rng.next() % 10)]
            bytes.insert(contentsOf: Array("\(names[Int(rng.next() % UInt64(names.count))]): \(value)\r\n".utf8), at: lineEnd + 1)
        default:
            // Bytes after the head: a body, or a next request.
            bytes.append(contentsOf: Array("xyzGET / HTTP/1.1\r\n\r\n".utf8.prefix(Int(rng.next() % 22))))
        }
    }

    /// NIO's parser, fed the same bytes, reads the same method, target and body, and finds the
    /// request to end where the edge says it does.
    static func expectAgreement(_ head: RawRequestHead, _ bytes: [UInt8]) throws {
        let text = String(decoding: bytes, as: UTF8.self).debugDescription
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .fireError)))
        defer { _ = try? channel.finish() }
        // Exactly the head and the body the edge framed: NIO must read one whole request from it.
        var input = ByteBuffer(bytes: bytes.dropFirst(head.length))
        var body = ByteBuffer()
        if head.chunked {
            var chunks = ChunkedBody()
            guard chunks.decode(&input, into: &body, maxBody: 1 << 20) == .done else { return }  // refused, or not all here
        } else {
            guard input.readableBytes >= head.contentLength else { return }  // the body is not all here yet
            body = input.readSlice(length: head.contentLength)!
        }
        let framed = Array(bytes.prefix(bytes.count - input.readableBytes))
        do {
            try channel.writeInbound(ByteBuffer(bytes: framed))
        } catch {
            Issue.record("NIO refused a request the edge took (\(error)): \(text)")
            return
        }
        guard case .head(let nio) = try channel.readInbound(as: HTTPServerRequestPart.self) else {
            Issue.record("NIO read no head where the edge took one: \(text)")
            return
        }
        #expect(nio.method.rawValue == head.method.name, "\(text)")
        // An absolute-form target is served as its path: NIO keeps it as sent.
        if nio.uri.hasPrefix("/") || nio.uri == "*" { #expect(nio.uri == head.target, "\(text)") }
        #expect(nio.version == (head.http10 ? .http1_0 : .http1_1), "\(text)")
        var nioBody = ByteBuffer()
        var ended = false
        while let part = try channel.readInbound(as: HTTPServerRequestPart.self) {
            switch part {
            case .body(var b): nioBody.writeBuffer(&b)
            case .end: ended = true
            case .head: Issue.record("a second head inside what the edge framed as one request: \(text)")
            }
        }
        #expect(ended, "NIO did not end the request where the edge did: \(text)")
        #expect(nioBody == body, "\(text)")
        // Closed after its answer when NIO would not keep it alive (an HTTP/1.0 request closes even
        // when it asks for keep-alive: the server's to refuse).
        #expect(head.http10 ? head.close : (nio.headers.contains(name: "connection") ? true : !head.close), "\(text)")
        if !nio.isKeepAlive { #expect(head.close, "\(text)") }
    }
}
