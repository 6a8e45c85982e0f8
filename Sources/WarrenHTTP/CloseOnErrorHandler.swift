import NIOCore
import NIOHTTP1

/// Makes sure an HTTP parse error that reaches the end of hummingbird's pipeline does not hold
/// its connection open: hummingbird answers it `400 Bad Request` with `Connection: close`
/// from its connection task and half-closes; if the connection is still open
/// ``grace`` later (the client kept its side open, or the answer could not be written), it is
/// closed here.
final class CloseOnErrorHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    /// How long hummingbird's answer is waited for.
    static let grace = TimeAmount.seconds(2)

    private var closer: Scheduled<Void>?

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Only parse errors: others (a refused upgrade, say) are answered further up and must
        // not lose their response to an early close.
        guard error is HTTPParserError else { return context.fireErrorCaught(error) }
        guard closer == nil else { return }
        let channel = context.channel
        closer = context.eventLoop.scheduleTask(in: Self.grace) { channel.close(promise: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        closer?.cancel()
        closer = nil
        context.fireChannelInactive()
    }
}
