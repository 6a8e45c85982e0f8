import NIOCore

/// An ``HTTPConnection``'s socket as a NIO channel, through its ``HTTPConnectionHandler``'s
/// context. Dropped by the handler when it leaves the pipeline or the channel closes
/// (``detach()``): it holds the context, which holds the handler, which holds the connection,
/// which holds this.
final class ChannelConnectionIO: HTTPConnectionIO {
    private var context: ChannelHandlerContext?
    private var handler: HTTPConnectionHandler?
    let loop: any EventLoop

    init(_ context: ChannelHandlerContext, handler: HTTPConnectionHandler) {
        self.context = context
        self.handler = handler
        loop = context.eventLoop
    }

    func detach() {
        context = nil
        handler = nil
    }

    var isActive: Bool { context?.channel.isActive ?? false }

    var channel: (any Channel)? { context?.channel }

    func write(_ bytes: ByteBuffer) {
        // Not asked of the channel first: a write on a closed one fails its (absent) promise,
        // and the check was a retain and an atomic load per answer.
        context?.writeAndFlush(NIOAny(bytes), promise: nil)
    }

    func writeAndCloseOutput(_ bytes: ByteBuffer) {
        guard let context else { return }
        let channel = context.channel
        let written = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(NIOAny(bytes), promise: written)
        written.futureResult.whenComplete { result in
            guard case .success = result else { return channel.close(promise: nil) }
            // A channel that cannot half-close (a TLS one) closes whole: its answer is written.
            channel.close(mode: .output).whenFailure { _ in channel.close(promise: nil) }
        }
    }

    func close() { context?.close(promise: nil) }

    func stopReading() { handler?.stopReading() }

    func resumeReading() { handler?.resumeReading() }

    /// A NIO channel serves every request itself: nothing is handed on.
    func handOn(_ bytes: ByteBuffer) { close() }

    func upgrade(installing install: (ChannelPipeline.SynchronousOperations) throws -> Void, forward: ByteBuffer) -> Bool {
        guard let context else { return false }
        do {
            try install(context.pipeline.syncOperations)
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
