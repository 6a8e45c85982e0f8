import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing
@testable import WarrenHTTP

@Suite("Persistence on the router's connections")
struct ConnectionPersistenceHandlerTests {
    func channel() throws -> EmbeddedChannel {
        EmbeddedChannel(handler: ConnectionPersistenceHandler())
    }

    func request(_ version: HTTPVersion, _ fields: [(String, String)] = []) -> HTTPServerRequestPart {
        .head(HTTPRequestHead(version: version, method: .GET, uri: "/healthz", headers: HTTPHeaders(fields)))
    }

    func response(_ fields: [(String, String)] = []) -> HTTPServerResponsePart {
        .head(HTTPResponseHead(version: .http1_1, status: .ok, headers: HTTPHeaders(fields)))
    }

    func readHead(_ channel: EmbeddedChannel) throws -> HTTPRequestHead? {
        guard case .head(let head) = try channel.readInbound(as: HTTPServerRequestPart.self) else { return nil }
        return head
    }

    func writtenHead(_ channel: EmbeddedChannel) throws -> HTTPResponseHead? {
        guard case .head(let head) = try channel.readOutbound(as: HTTPServerResponsePart.self) else { return nil }
        return head
    }

    @Test func aPersistentRequestPassesAsItCame() throws {
        let channel = try channel()
        try channel.writeInbound(request(.http1_1, [("Host", "x")]))
        #expect(try readHead(channel)?.headers["connection"] == [])
        try channel.writeOutbound(response([("content-length", "3")]))
        let head = try writtenHead(channel)
        #expect(head?.version == .http1_1 && head?.headers["connection"] == [])
    }

    @Test func closeInAnyCaseReachesHummingbirdAsClose() throws {
        let channel = try channel()
        try channel.writeInbound(request(.http1_1, [("Connection", "Keep-Alive, Close")]))
        #expect(try readHead(channel)?.headers["connection"] == ["close"])
    }

    @Test func http10ClosesAndIsNeverChunked() throws {
        let channel = try channel()
        // Two requests read before either answer: each answer goes with its own request.
        try channel.writeInbound(request(.http1_0, [("Connection", "keep-alive")]))
        try channel.writeInbound(request(.http1_1))
        #expect(try readHead(channel)?.headers["connection"] == ["close"])
        #expect(try readHead(channel)?.headers["connection"] == [])

        try channel.writeOutbound(HTTPServerResponsePart.head(HTTPResponseHead(version: .http1_1, status: .continue)))
        #expect(try writtenHead(channel)?.headers["connection"] == [], "an informational answer is not the request's")
        try channel.writeOutbound(response())
        let unknownLength = try writtenHead(channel)
        #expect(unknownLength?.version == .http1_0 && unknownLength?.headers["connection"] == ["close"])
        try channel.writeOutbound(response())
        #expect(try writtenHead(channel)?.version == .http1_1, "the HTTP/1.1 request's answer")

        try channel.writeInbound(request(.http1_0))
        try channel.writeOutbound(response([("content-length", "3")]))
        let known = try writtenHead(channel)
        #expect(known?.version == .http1_1 && known?.headers["connection"] == ["close"])
    }
}
