#if os(Linux)
import NIOCore

/// First in the pipeline of a connection the ``EpollDoor`` hands to NIO: what the door read
/// from it and did not take goes up the pipeline as the channel becomes active, before anything
/// NIO reads from the socket (a read fired later, from another task, came after NIO's own first
/// read of the rest of a request's body). Then it leaves.
final class HandedOnBytesHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private var bytes: ByteBuffer?

    init(_ bytes: ByteBuffer) { self.bytes = bytes }

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        if let bytes, bytes.readableBytes > 0 {
            context.fireChannelRead(wrapInboundOut(bytes))
            context.fireChannelReadComplete()
        }
        bytes = nil
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
#endif
