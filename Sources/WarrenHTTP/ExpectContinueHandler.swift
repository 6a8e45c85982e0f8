import NIOCore
import NIOHTTP1

/// `100 Continue` (RFC 9110 §10.1.1) on the router's connections. Hummingbird never sends it, so
/// a client that holds its body back until told (curl for large bodies; older libcurl, as PHP
/// back ends use it, from 1 KB) waited out its own timeout, a second for curl, on every such
/// request of a connection the router serves: a keep-alive back end that read history and then
/// published paid that second per publish. ``PollConnection`` answers the poll door's
/// own requests itself.
///
/// Sits between NIO's HTTP/1 decoder and hummingbird's conversion (beside
/// ``ConnectionPersistenceHandler``). Said only when no earlier answer is still being written on
/// the connection (a `100` in the middle of another response would break its framing: a
/// pipelined request behind one still being answered waits for the client's timeout, as
/// before), and never to an HTTP/1.0 client (RFC 9110 §15.2).
final class ExpectContinueHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Requests read whose answer has not ended.
    private var unanswered = 0

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) {
            unanswered += 1
            if unanswered == 1, head.version == .http1_1,
               head.headers["expect"].contains(where: { $0.lowercased() == "100-continue" }) {
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .continue))), promise: nil)
            }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { unanswered = max(0, unanswered - 1) }
        context.write(data, promise: promise)
    }
}
