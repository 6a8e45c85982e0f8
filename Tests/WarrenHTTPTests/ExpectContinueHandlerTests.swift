import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing
@testable import WarrenHTTP

@Suite("100 Continue on the router's connections")
struct ExpectContinueHandlerTests {
    func request(_ version: HTTPVersion = .http1_1, expect: String? = "100-continue") -> HTTPServerRequestPart {
        var headers = HTTPHeaders([("Content-Length", "10")])
        if let expect { headers.add(name: "Expect", value: expect) }
        return .head(HTTPRequestHead(version: version, method: .POST, uri: "/v1/messages", headers: headers))
    }

    func continues(_ channel: EmbeddedChannel) throws -> Int {
        var count = 0
        while let part = try channel.readOutbound(as: HTTPServerResponsePart.self) {
            if case .head(let head) = part, head.status == .continue { count += 1 }
        }
        return count
    }

    func answer(_ channel: EmbeddedChannel) throws {
        try channel.writeOutbound(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .accepted)))
        try channel.writeOutbound(HTTPServerResponsePart.end(nil))
    }

    @Test func saysContinueToARequestThatWaitsForIt() throws {
        let channel = EmbeddedChannel(handler: ExpectContinueHandler())
        try channel.writeInbound(request(expect: "100-Continue"))
        #expect(try continues(channel) == 1)
        #expect(try channel.readInbound(as: HTTPServerRequestPart.self) != nil, "the request goes on to hummingbird")
        try answer(channel)
        // The next request on the connection, once the first is answered: told too.
        try channel.writeInbound(request())
        #expect(try continues(channel) == 1)
    }

    @Test func saysNothingOutOfTurnOrToWhomItDoesNotConcern() throws {
        let channel = EmbeddedChannel(handler: ExpectContinueHandler())
        try channel.writeInbound(request(expect: nil))
        try channel.writeInbound(request(.http1_0))
        #expect(try continues(channel) == 0, "no expectation; an HTTP/1.0 client")
        try answer(channel)
        try answer(channel)
        // Pipelined behind a request still being answered: a 100 now would land inside that answer.
        try channel.writeInbound(request(expect: nil))
        try channel.writeInbound(request())
        #expect(try continues(channel) == 0)
    }
}
