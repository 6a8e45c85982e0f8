import NIOCore
import NIOHTTP1

/// Writes the upgrade request; an answer that is not an upgrade fails `refused` with its status.
final class WebSocketUpgradeRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    let host: String
    let port: Int
    let target: String
    let refused: EventLoopPromise<Void>

    init(host: String, port: Int, target: String, refused: EventLoopPromise<Void>) {
        self.host = host
        self.port = port
        self.target = target
        self.refused = refused
    }

    func channelActive(context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "\(host):\(port)")
        headers.add(name: "Content-Length", value: "0")
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: target, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let response) = unwrapInboundIn(data) {
            refused.fail(WarrenError(Self.code(response.status.code), "the WebSocket upgrade was refused: \(response.status.code)",
                                     status: Int(response.status.code)))
            context.close(promise: nil)
        }
    }

    static func code(_ status: UInt) -> String {
        switch status {
        case 401: "unauthorized"
        case 400: "bad_frame"
        case 403: "forbidden"
        case 429: "rate_limited"
        default: "unavailable"
        }
    }
}
