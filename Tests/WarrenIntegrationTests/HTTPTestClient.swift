import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import WarrenCore

/// A minimal real HTTP/1.1 client on SwiftNIO for the tests: one connection per
/// request, so a thousand long-polls can be held open at once.
enum HTTPTestClient {
    struct Response: Sendable {
        var status: Int
        var body: String
        var headers: [(String, String)] = []
        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }
        var json: JSONValue? { try? JSONParser.parse(body) }
    }

    final class Collector: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPClientResponsePart
        let promise: EventLoopPromise<Response>
        var status = 0
        var headers: [(String, String)] = []
        var body = ByteBuffer()
        init(promise: EventLoopPromise<Response>) { self.promise = promise }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                status = Int(head.status.code)
                headers = head.headers.map { ($0.name, $0.value) }
            case .body(var b): body.writeBuffer(&b)
            case .end:
                promise.succeed(Response(status: status, body: String(buffer: body), headers: headers))
                context.close(promise: nil)
            }
        }
        func channelInactive(context: ChannelHandlerContext) {
            promise.fail(ChannelError.eof)
        }
        func errorCaught(context: ChannelHandlerContext, error: Error) {
            promise.fail(error)
            context.close(promise: nil)
        }
    }

    static func request(_ method: HTTPMethod, port: Int, _ target: String, body: String? = nil,
                        headers: [(String, String)] = []) async throws -> Response {
        let group = MultiThreadedEventLoopGroup.singleton
        let loop = group.next()
        let promise = loop.makePromise(of: Response.self)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: loop)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(Collector(promise: promise))
                    }
                }
                .connect(host: "127.0.0.1", port: port).get()
        } catch {
            promise.fail(error) // (a promise left open is a crash in debug builds)
            throw error
        }
        var head = HTTPRequestHead(version: .http1_1, method: method, uri: target)
        head.headers.add(name: "Host", value: "127.0.0.1:\(port)")
        if !headers.contains(where: { $0.0.lowercased() == "connection" }) { head.headers.add(name: "Connection", value: "close") }
        for (k, v) in headers { head.headers.add(name: k, value: v) }
        if let body {
            head.headers.add(name: "Content-Type", value: "application/json")
            head.headers.add(name: "Content-Length", value: "\(body.utf8.count)")
        } else if method == .POST {
            head.headers.add(name: "Content-Length", value: "0")
        }
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        if let body { channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(string: body))), promise: nil) }
        try await channel.writeAndFlush(HTTPClientRequestPart.end(nil))
        return try await promise.futureResult.get()
    }
}

/// The pattern of everything a user is part of, `#.<user>.#`.
func mine(_ user: String) -> String { "#.\(user).#" }
