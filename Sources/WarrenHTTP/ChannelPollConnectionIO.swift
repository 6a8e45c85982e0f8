import NIOCore

/// A ``PollConnection``'s socket as a NIO channel, through its ``PollConnectionHandler``'s
/// context. The context is dropped when the handler leaves the pipeline (``detach()``): it
/// holds the handler, which holds the connection, which holds this.
final class ChannelPollConnectionIO: PollConnectionIO {
    private var context: ChannelHandlerContext?
    private let setUpHummingbird: PollConnectionHandler.HandOn
    let loop: any EventLoop

    init(_ context: ChannelHandlerContext, handOn: @escaping PollConnectionHandler.HandOn) {
        self.context = context
        self.setUpHummingbird = handOn
        loop = context.eventLoop
    }

    func detach() { context = nil }

    var isActive: Bool { context?.channel.isActive ?? false }

    func write(_ bytes: ByteBuffer) {
        // Not asked of the channel first: a write on a closed one fails its (absent) promise,
        // and the check was a retain and an atomic load per answer.
        context?.writeAndFlush(NIOAny(bytes), promise: nil)
    }

    func close() { context?.close(promise: nil) }

    func handOn(_ bytes: ByteBuffer) {
        guard let context else { return }
        let bound = NIOLoopBound(context, eventLoop: loop)
        setUpHummingbird(context.channel).whenComplete { result in
            let context = bound.value
            guard case .success = result else { return context.close(promise: nil) }
            if bytes.readableBytes > 0 {
                context.fireChannelRead(NIOAny(bytes))
                context.fireChannelReadComplete()
            }
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    var upgradesWebSockets: Bool { true }

    func upgrade(_ admitted: WebSocketDoor.Admitted, door: WebSocketDoor, forward: ByteBuffer) -> Bool {
        guard let context else { return false }
        do {
            try door.install(admitted, on: context.pipeline.syncOperations)
        } catch {
            return false
        }
        if forward.readableBytes > 0 {
            context.fireChannelRead(NIOAny(forward))
            context.fireChannelReadComplete()
        }
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        return true
    }
}
