import NIOCore
import NIOHTTP1

final class NchanPollHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    let port: Int
    let path: String
    let index: Int
    let recorder: Recorder
    let ready: EventLoopPromise<Void>
    private var lastModified: String?
    private var etag: String?
    private var status: UInt = 0
    private var headers = HTTPHeaders()
    private var body = ByteBuffer()

    init(port: Int, path: String, index: Int, recorder: Recorder, ready: EventLoopPromise<Void>) {
        self.port = port
        self.path = path
        self.index = index
        self.recorder = recorder
        self.ready = ready
    }

    func channelActive(context: ChannelHandlerContext) {
        poll(context)
        ready.succeed(())
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = head.status.code
            headers = head.headers
            body.clear()
        case .body(var part):
            body.writeBuffer(&part)
        case .end:
            answered(context)
        }
    }

    private func answered(_ context: ChannelHandlerContext) {
        let now = BenchClock.now()
        switch status {
        case 200:
            recorder.answers += 1
            body.withUnsafeReadableBytes { bytes in NchanAnswer.scan(bytes) { recorder.record(client: index, stamp: $0, now: now) } }
            lastModified = headers.first(name: "Last-Modified") ?? lastModified
            etag = headers.first(name: "Etag") ?? etag
        case 304, 408:
            break // nothing new within the subscriber timeout: ask again from the same place
        default:
            recorder.error("nchan answered \(status): \(String(buffer: body))")
            context.close(promise: nil)
            return
        }
        poll(context)
    }

    private func poll(_ context: ChannelHandlerContext) {
        var h = HTTPHeaders()
        h.add(name: "Host", value: "127.0.0.1:\(port)")
        if let lastModified { h.add(name: "If-Modified-Since", value: lastModified) }
        if let etag { h.add(name: "If-None-Match", value: etag) }
        context.write(wrapOutboundOut(.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: h))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
