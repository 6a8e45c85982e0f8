import NIOCore
import WarrenCore

/// A poller's connection as the place its polls are answered: the answer is written on the
/// connection's event loop, from whichever thread took it (the broker connection's loop, a
/// deadline, another poll). Made at the connection's first poll and kept for the others; the
/// handler drops it when it leaves the pipeline.
final class PollConnectionSink: PollAnswerSink {
    private let loop: any EventLoop
    private let channel: any Channel
    private let bound: NIOLoopBound<(PollConnectionHandler, ChannelHandlerContext)>

    init(_ handler: PollConnectionHandler, _ context: ChannelHandlerContext) {
        loop = context.eventLoop
        channel = context.channel
        bound = NIOLoopBound((handler, context), eventLoop: context.eventLoop)
    }

    var isAlive: Bool { channel.isActive }

    func answer(_ taken: PollAnswer) {
        if loop.inEventLoop {
            let (handler, context) = bound.value
            handler.respond(context, taken)
        } else {
            loop.execute { [bound] in
                let (handler, context) = bound.value
                handler.respond(context, taken)
            }
        }
    }
}
