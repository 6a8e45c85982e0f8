import NIOCore
import NIOHTTP1

/// Closes the connection when an HTTP parse error reaches the end of hummingbird's pipeline
/// (a malformed request must not hold its connection open, unanswered).
final class CloseOnErrorHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Only parse errors: others (a refused upgrade, say) are answered further up and must
        // not lose their response to an early close.
        if error is HTTPParserError {
            context.close(promise: nil)
        } else {
            context.fireErrorCaught(error)
        }
    }
}
