import NIOCore

/// The NIO driver of an ``HTTPConnection``: every connection a NIO listener accepts (TLS
/// after its handler, the operations listener, the connections the epoll door hands on) gets
/// one as its last handler. It passes the channel's events in and does what the connection
/// says: writes, half-closes, stops and resumes reading (it holds back the channel's `read`
/// while stopped), and leaves the pipeline when the connection becomes a WebSocket's.
///
/// Writability is the channel's own: its write buffer's high water mark is
/// `http.max_pending_output` (``HTTPListener``), so the connection hears when the client has
/// not read that much and stops reading it until it drains.
final class HTTPConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let edge: EdgeContext
    private var connection: HTTPConnection<ChannelConnectionIO>?
    /// Reading is stopped; a `read` asked for meanwhile is held.
    private var readStopped = false
    private var readHeld = false
    private var context: ChannelHandlerContext?

    init(_ edge: EdgeContext) {
        self.edge = edge
    }

    // MARK: channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        connection = HTTPConnection(edge, io: ChannelConnectionIO(context, handler: self))
        if context.channel.isActive { connection?.start() }
    }

    func channelActive(context: ChannelHandlerContext) {
        connection?.start()
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        connection?.detached()
        connection?.io.detach()
        connection = nil
        self.context = nil
        // A WebSocket's handlers read from here on.
        if readHeld { context.read() }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let connection else { return context.fireChannelRead(data) }
        connection.read(unwrapInboundIn(data))
    }

    func channelInactive(context: ChannelHandlerContext) {
        let connection = self.connection
        self.connection = nil
        connection?.closed()
        connection?.io.detach()
        context.fireChannelInactive()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        connection?.writabilityChanged(context.channel.isWritable)
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let connection {
            if event is ChannelShouldQuiesceEvent { connection.quiesce() }
            if let event = event as? ChannelEvent, event == .inputClosed { connection.inputClosed() }
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A reset, a TLS failure: the connection is over (NIO closes it after an I/O error).
        context.close(promise: nil)
    }

    // MARK: reading

    func read(context: ChannelHandlerContext) {
        if readStopped {
            readHeld = true
        } else {
            context.read()
        }
    }

    func stopReading() { readStopped = true }

    func resumeReading() {
        readStopped = false
        if readHeld, let context {
            readHeld = false
            context.read()
        }
    }
}
