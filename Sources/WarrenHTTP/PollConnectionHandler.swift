import HTTPTypes
import NIOCore
import WarrenCore

/// A ``PollConnection`` on a NIO channel, below hummingbird: the connections of TLS listeners,
/// of the operations listener's neighbour, and those the epoll door hands over (its
/// ``EpollConnection``s are served without NIO). It sits after the first-request head timeout
/// and before the HTTP decoder, and leaves the pipeline once the connection is hummingbird's
/// or a WebSocket's.
///
/// Measured (BENCHMARKS.md): through hummingbird a poll answer cost Warren ~136 µs of CPU
/// (an async channel, a task per connection, two thread hops per request); answered on the
/// event loop behind hummingbird's HTTP/1 pipeline ~70–96 µs, a third of it NIO's HTTP/1
/// parser and the conversions to and from swift-http-types. And a connection served by
/// hummingbird keeps a task whose allocator holds ~10–20 KB for the connection's life; a
/// poller's connection here never gets one (``HTTPListener``).
final class PollConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// Sets up hummingbird's pipeline behind this handler (on the loop).
    typealias HandOn = @Sendable (any Channel) -> EventLoopFuture<Void>

    private let door: PollConnectionContext
    private let setUpHummingbird: HandOn
    private var connection: PollConnection<ChannelPollConnectionIO>?

    init(_ door: PollConnectionContext, handOn: @escaping HandOn) {
        self.door = door
        self.setUpHummingbird = handOn
    }

    // MARK: channel events

    func handlerAdded(context: ChannelHandlerContext) {
        let io = ChannelPollConnectionIO(context, handOn: setUpHummingbird)
        connection = PollConnection(door, io: io)
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
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let connection, !connection.handedOn else { return context.fireChannelRead(data) }
        connection.read(unwrapInboundIn(data))
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection?.closed()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let connection, !connection.handedOn {
            if event is ChannelShouldQuiesceEvent { connection.quiesce() }
            if let event = event as? ChannelEvent, event == .inputClosed { connection.inputClosed() }
        }
        context.fireUserInboundEventTriggered(event)
    }

    // MARK: response heads

    /// The statuses the poll path answers with, and their reason phrases.
    private static let known: [HTTPResponse.Status] = [.ok, .created, .accepted, .badRequest, .unauthorized, .forbidden, .notFound, .conflict,
                                                        .contentTooLarge, .uriTooLong, .tooManyRequests, .internalServerError, .serviceUnavailable]

    /// The response head, in a buffer with room for a body of `reserving` bytes after it.
    static func responseHead(status: Int, length: Int, close: Bool, reserving: Int = 0) -> ByteBuffer {
        var head = ByteBuffer()
        head.reserveCapacity(128 + reserving)
        if status == 200 {
            // Every poll answer: the status line and type written as one constant, the length's
            // digits in place (no `String` made per answer).
            head.writeStaticString("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ")
            writeDecimal(length, to: &head)
            head.writeStaticString(close ? "\r\nconnection: close\r\n\r\n" : "\r\n\r\n")
            return head
        }
        head.writeStaticString("HTTP/1.1 ")
        head.writeString(String(status))
        head.writeStaticString(" ")
        head.writeString(Self.known.first { $0.code == status }?.reasonPhrase ?? "Status")
        head.writeStaticString("\r\ncontent-type: application/json\r\ncontent-length: ")
        head.writeString(String(length))
        if status == 429 {
            head.writeStaticString("\r\nretry-after: ")
            head.writeString(RouteSupport.retryAfterSeconds)
        }
        head.writeStaticString(close ? "\r\nconnection: close\r\n\r\n" : "\r\n\r\n")
        return head
    }

    /// Writes a non-negative integer's decimal digits (as ``JSONWriter/int(_:)`` does, into the buffer).
    static func writeDecimal(_ value: Int, to buffer: inout ByteBuffer) {
        writeDecimal(UInt64(max(0, value)), to: &buffer)
    }

    static func writeDecimal(_ value: UInt64, to buffer: inout ByteBuffer) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: UInt64's 20 digits fit
        var n = value
        withUnsafeMutableBytes(of: &digits) { d in
            var i = d.count
            repeat {
                i -= 1
                d[i] = UInt8(truncatingIfNeeded: n % 10) + 48
                n /= 10
            } while n > 0
            buffer.writeBytes(UnsafeRawBufferPointer(rebasing: d[i...]))
        }
    }

    /// How many decimal digits ``writeDecimal(_:to:)-(UInt64,_)`` writes for `value`.
    static func decimalDigits(_ value: UInt64) -> Int {
        var n = value, count = 1
        while n >= 10 {
            n /= 10
            count += 1
        }
        return count
    }

    /// `response` with `connection: close` added to its head.
    static func withClose(_ response: ByteBuffer) -> ByteBuffer {
        let view = response.readableBytesView
        guard let end = view.firstRange(of: "\r\n\r\n".utf8) else { return response }
        var out = ByteBuffer()
        out.reserveCapacity(response.readableBytes + 19)
        out.writeBytes(view[view.startIndex..<end.lowerBound])
        out.writeStaticString("\r\nconnection: close")
        out.writeBytes(view[end.lowerBound...])
        return out
    }
}
