import NIOCore
import NIOHTTP1

/// Persistence (RFC 9112 §9.3) on the router's connections. Hummingbird sees a request only as
/// swift-http-types fields, without its HTTP version, and keeps a connection open unless the
/// request's `Connection` field is exactly `close`. So an HTTP/1.0 request (which means close
/// unless it says `keep-alive`) was answered and the connection kept open: a client that reads
/// its answer to the end of the connection, as Nagios' `check_http`, a `printf … | nc` health
/// script or an HTTP/1.0 load balancer check do, waited for `http.idle_timeout`. A
/// `Connection: Close` (any other case) was not honoured either.
///
/// Sits between NIO's HTTP/1 decoder and hummingbird's conversion to swift-http-types. A request
/// NIO's parser reads as not persistent, and every HTTP/1.0 request, reaches hummingbird with
/// `Connection: close`, so the connection closes once it is answered. HTTP/1.0 keep-alive is not
/// kept: closing is always allowed, and an answer of unknown length could not be chunked for it.
/// Such an answer goes as HTTP/1.0, so NIO's encoder does not chunk it (RFC 9112 §6.1: no
/// `Transfer-Encoding` to an HTTP/1.0 client) and its end is the connection's.
final class ConnectionPersistenceHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// Whether each request read and not yet answered was HTTP/1.0 (hummingbird answers in order).
    private var http10 = CircularBuffer<Bool>(initialCapacity: 2)

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data) else { return context.fireChannelRead(data) }
        let old = head.version == .http1_0
        http10.append(old)
        if old || !head.isKeepAlive {
            head.headers.replaceOrAdd(name: "connection", value: "close")
        }
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head(var head) = unwrapOutboundIn(data), head.status.code >= 200,
              let old = http10.popFirst(), old else {
            return context.write(data, promise: promise)
        }
        head.headers.replaceOrAdd(name: "connection", value: "close")
        if !head.headers.contains(name: "content-length") { head.version = .http1_0 }
        context.write(wrapOutboundOut(.head(head)), promise: promise)
    }
}
