import NIOCore

/// The NIO floor server's one handler: the whole pipeline of a connection, whose session is
/// the connection. Answers to a message share one buffer.
final class FloorHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let sessions: FloorLoopSessions
    private var buffer = ByteBuffer()
    private var context: ChannelHandlerContext?
    private var parked = false
    private var pending: [FloorMessage] = []
    private var index = -1

    init(_ sessions: FloorLoopSessions) { self.sessions = sessions }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func channelInactive(context: ChannelHandlerContext) {
        if index >= 0 {
            let last = sessions.handlers.removeLast()
            if last !== self {
                sessions.handlers[index] = last
                last.index = index
            }
            index = -1
        }
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        if buffer.readableBytes == 0 { buffer = bytes } else { buffer.writeBuffer(&bytes) }
        while let request = buffer.withUnsafeReadableBytes({ FloorRequest.first($0) }) {
            buffer.moveReaderIndex(forwardBy: request.length)
            answer(context, request.kind)
        }
        if buffer.readableBytes == 0 { buffer = ByteBuffer() }
    }

    /// On the loop, for each message: `shared` is its answer, the same buffer for every poller.
    func deliver(_ message: FloorMessage, _ shared: ByteBuffer) {
        guard parked, let context else { return pending.append(message) }
        parked = false
        context.writeAndFlush(wrapOutboundOut(shared), promise: nil)
    }

    private func answer(_ context: ChannelHandlerContext, _ kind: FloorRequest.Kind) {
        let bytes: [UInt8]
        switch kind {
        case .poll:
            guard let last = pending.last else {
                parked = true
                return
            }
            bytes = FloorMessage.answer(items: pending.map(\.item), sequence: last.sequence)
            pending.removeAll(keepingCapacity: true)
        case .create:
            if index < 0 {
                index = sessions.handlers.count
                sessions.handlers.append(self)
            }
            bytes = FloorMessage.created
        case .ready:
            bytes = FloorMessage.ready
        case .other:
            bytes = FloorMessage.notFound
        }
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(bytes: bytes)), promise: nil)
    }
}
