import Logging
import NIOCore

/// On the listening socket: an accept that fails (out of descriptors, the process's or the
/// system's, or out of memory) pauses accepting for ``pause``, then accepting resumes.
///
/// The pending connection stays in the kernel's queue, so the listening socket stays readable,
/// and an event loop that tried again at once would spin on it at full CPU, serving nothing,
/// until a descriptor came free. NIO's `AcceptBackoffHandler` (which NIO's async `bind` adds)
/// does not stop that in the NIO this builds with: it delays the next `read()`, but a failed
/// accept leaves the channel's read pending, so the socket stays registered and the loop keeps
/// waking (measured: 100 % of a core at the descriptor limit, one accept error per wake-up).
/// Turning `autoRead` off takes the socket out of the loop's interest set; turning it on again
/// puts it back. nginx does the same for 500 ms.
final class AcceptPauseHandler: ChannelInboundHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel

    static let pause = AcceptPause.duration

    private let logger: Logger
    private var paused = false
    /// Accepts that failed since the last that worked: the first is logged, and the count
    /// when accepting works again (not a line every pause while the node stays at its limit).
    private var failures = 0

    init(logger: Logger) {
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if failures > 0 {
            logger.info("accepting connections again", metadata: ["failedAccepts": "\(failures)"])
            failures = 0
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Only a failed accept pauses (NIO closes the listening socket itself on the errors it
        // cannot recover from); anything else goes on down the pipeline.
        guard error is IOError, !paused, context.channel.isActive, let options = context.channel.syncOptions else {
            return context.fireErrorCaught(error)
        }
        paused = true
        failures += 1
        if failures == 1 {
            logger.warning("cannot accept a connection; pausing accepts \(Self.pause.nanoseconds / 1_000_000) ms at a time until one works",
                           metadata: ["error": "\(error)"])
        }
        try? options.setOption(.autoRead, value: false)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: Self.pause) {
            let (handler, context) = bound.value
            handler.paused = false
            guard context.channel.isActive else { return }
            try? context.channel.syncOptions?.setOption(.autoRead, value: true)
        }
    }
}
