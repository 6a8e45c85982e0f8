import NIOCore
import NIOPosix

/// A Warren HTTP publisher (`POST /v1/messages`, docs/protocol.md) on one keep-alive connection: on
/// ``BenchStart``, `count` publishes to `route` as `user`, each sent when the one before was
/// answered (202); the recorder gets publish → answer. Bodies are stamped `firstSeq + i`.
/// Reads answers from the raw bytes (status line, `content-length`): the load tool must cost
/// far less than what it measures.
public enum HTTPPublishClient {
    public static func open(port: Int, user: String, route: String, count: Int, firstSeq: Int, index: Int,
                            recorder: Recorder) -> EventLoopFuture<any Channel> {
        dial(port: port, recorder: recorder, name: "http publisher \(index)") { channel, ready in
            try channel.pipeline.syncOperations.addHandler(
                HTTPPublishHandler(port: port, user: user, route: route, count: count, firstSeq: firstSeq, index: index,
                                   recorder: recorder, ready: ready))
        }
    }
}

final class HTTPPublishHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let head: String
    let route: String
    let count: Int
    let firstSeq: Int
    let index: Int
    let recorder: Recorder
    let ready: EventLoopPromise<Void>
    private var pending = ByteBuffer()
    private var published = 0
    private var publishedAt: UInt64 = 0

    init(port: Int, user: String, route: String, count: Int, firstSeq: Int, index: Int, recorder: Recorder,
         ready: EventLoopPromise<Void>) {
        head = "POST /v1/messages?user=\(user) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\ncontent-type: application/json\r\ncontent-length: "
        self.route = route
        self.count = count
        self.firstSeq = firstSeq
        self.index = index
        self.recorder = recorder
        self.ready = ready
    }

    func channelActive(context: ChannelHandlerContext) {
        ready.succeed(())
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is BenchStart else { return context.fireUserInboundEventTriggered(event) }
        publishNext(context)
    }

    private func publishNext(_ context: ChannelHandlerContext) {
        guard published < count else { return }
        publishedAt = BenchClock.now()
        let body = #"{"route":"\#(route)","body":"\#(firstSeq + published).\#(publishedAt)","cid":"c\#(published)"}"#
        published += 1
        var buffer = context.channel.allocator.buffer(capacity: head.utf8.count + body.utf8.count + 8)
        buffer.writeString(head)
        buffer.writeString(String(body.utf8.count))
        buffer.writeStaticString("\r\n\r\n")
        buffer.writeString(body)
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        pending.writeBuffer(&bytes)
        while let (status, length) = Self.response(pending) {
            let now = BenchClock.now()
            let text = pending.readString(length: length) ?? ""
            if status == 202 || status == 200 {
                recorder.record(client: index, stamp: Stamp(seq: published - 1, sentNanos: publishedAt), now: now)
            } else {
                recorder.error("HTTP \(status): \(text.suffix(200))")
            }
            publishNext(context)
        }
        if pending.readableBytes == 0 { pending.clear() }
    }

    /// A complete response at the front of `buffer`: its status and whole length.
    static func response(_ buffer: ByteBuffer) -> (status: Int, length: Int)? {
        buffer.withUnsafeReadableBytes { bytes -> (Int, Int)? in
            guard let end = find("\r\n\r\n", in: bytes), bytes.count > 12 else { return nil }
            var status = 0
            for i in 9..<12 { status = status * 10 + Int(bytes[i]) - 48 }
            var bodyLength = 0
            if let at = findCaseless("\r\ncontent-length:", in: bytes, before: end) {
                var i = at + 17
                while i < end, bytes[i] == UInt8(ascii: " ") { i += 1 }
                while i < end, bytes[i] >= 48, bytes[i] <= 57 {
                    bodyLength = bodyLength * 10 + Int(bytes[i]) - 48
                    i += 1
                }
            }
            let length = end + 4 + bodyLength
            return bytes.count >= length ? (status, length) : nil
        }
    }

    /// Where `needle` (lower case ASCII) starts in `bytes` before `limit`, ignoring case.
    static func findCaseless(_ needle: StaticString, in bytes: UnsafeRawBufferPointer, before limit: Int) -> Int? {
        let n = needle.utf8CodeUnitCount
        guard limit >= n else { return nil }
        let p = needle.utf8Start
        outer: for start in 0...(limit - n) {
            for k in 0..<n where bytes[start + k] | (bytes[start + k] >= 65 && bytes[start + k] <= 90 ? 0x20 : 0) != p[k] {
                continue outer
            }
            return start
        }
        return nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        if published < count { recorder.error("http publisher \(index) closed after \(published) of \(count)") }
        context.fireChannelInactive()
    }
}
