import NIOCore

/// On a test proxy's client side: notes each request the client sends, and once `shouldHold`
/// says so of one, holds back what the target answers on that connection until ``release()``
/// (an answer still on its way while the test does something else).
final class AnswerHolder: ChannelDuplexHandler, @unchecked Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let eventLoop: any EventLoop
    private let shouldHold: @Sendable (ByteBuffer) -> Bool
    private var context: ChannelHandlerContext?
    private var holding = false
    private var held: [(NIOAny, EventLoopPromise<Void>?)] = []

    init(eventLoop: any EventLoop, shouldHold: @escaping @Sendable (ByteBuffer) -> Bool) {
        self.eventLoop = eventLoop
        self.shouldHold = shouldHold
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !holding, shouldHold(unwrapInboundIn(data)) { holding = true }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if holding { held.append((data, promise)) } else { context.write(data, promise: promise) }
    }

    func flush(context: ChannelHandlerContext) {
        if !holding { context.flush() }
    }

    /// Lets what was held go on to the client.
    func release() {
        eventLoop.execute { [self] in
            holding = false
            guard let context else { return }
            for (data, promise) in held { context.write(data, promise: promise) }
            held = []
            context.flush()
        }
    }
}
