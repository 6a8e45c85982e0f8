import NIOCore

/// Copies bytes between two channels (the test proxies' two halves), unless `isFrozen` says
/// to drop them; closing one side closes the other, unless frozen.
public final class SpliceHandler: ChannelDuplexHandler, @unchecked Sendable {
    public typealias InboundIn = ByteBuffer
    public typealias OutboundIn = ByteBuffer
    public typealias OutboundOut = ByteBuffer

    private var partner: SpliceHandler?
    private var context: ChannelHandlerContext?
    private let isFrozen: @Sendable () -> Bool

    init(isFrozen: @escaping @Sendable () -> Bool) { self.isFrozen = isFrozen }

    public static func pair(isFrozen: @escaping @Sendable () -> Bool) -> (SpliceHandler, SpliceHandler) {
        pair(isFrozen: isFrozen, isFrozen)
    }

    /// A pair frozen separately: `a` drops what its channel reads while `aFrozen` says so, `b` likewise.
    public static func pair(isFrozen aFrozen: @escaping @Sendable () -> Bool,
                            _ bFrozen: @escaping @Sendable () -> Bool) -> (SpliceHandler, SpliceHandler) {
        let a = SpliceHandler(isFrozen: aFrozen)
        let b = SpliceHandler(isFrozen: bFrozen)
        a.partner = b
        b.partner = a
        return (a, b)
    }

    public func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { context.read() }
    }

    public func channelActive(context: ChannelHandlerContext) {
        context.read()
        context.fireChannelActive()
    }
    public func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        self.partner = nil
    }

    private func partnerWrite(_ data: ByteBuffer) {
        guard let context else { return }
        context.eventLoop.execute { [self] in
            guard let ctx = self.context else { return }
            ctx.writeAndFlush(self.wrapOutboundOut(data), promise: nil)
        }
    }

    private func partnerClose() {
        guard let context else { return }
        context.eventLoop.execute { [self] in self.context?.close(promise: nil) }
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        if !isFrozen() { partner?.partnerWrite(bytes) }
    }

    public func channelReadComplete(context: ChannelHandlerContext) { context.read() }

    public func channelInactive(context: ChannelHandlerContext) {
        if !isFrozen() { partner?.partnerClose() }
        context.fireChannelInactive()
    }

    public func read(context: ChannelHandlerContext) { context.read() }
}
