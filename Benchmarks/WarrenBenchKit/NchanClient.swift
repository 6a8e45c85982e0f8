import NIOCore
import NIOHTTP1
import NIOPosix

/// A long-polling subscriber of Nchan (nginx's pub/sub module), the anchor for Warren's
/// polling door: `GET /sub/<channel>` (one message per answer) or `GET /multi/<channel>`
/// (every waiting message in one answer, `nchan_longpoll_multipart_response raw`), then each
/// next request with the last answer's `Last-Modified` / `Etag` as `If-Modified-Since` /
/// `If-None-Match`, as Nchan's long-poll protocol asks, on one keep-alive connection.
public enum NchanPollClient {
    /// Completes once the first request is written: the bench's Nchan starts new subscribers
    /// at the oldest buffered message, so nothing published after that is missed.
    public static func open(port: Int, channel: String, multi: Bool, index: Int, recorder: Recorder) -> EventLoopFuture<any Channel> {
        dial(port: port, recorder: recorder, name: "nchan poller \(index)") { ch, ready in
            try ch.pipeline.syncOperations.addHTTPClientHandlers()
            try ch.pipeline.syncOperations.addHandler(
                NchanPollHandler(port: port, path: "/\(multi ? "multi" : "sub")/\(channel)", index: index, recorder: recorder, ready: ready))
        }
    }
}

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

/// Nchan answers: one message body, or (raw multipart) several separated by newlines.
public enum NchanAnswer {
    /// Calls `body` with the stamp of each message in the answer.
    public static func scan(_ bytes: UnsafeRawBufferPointer, _ body: (Stamp?) -> Void) {
        var start = 0
        while start < bytes.count {
            let end = index(of: UInt8(ascii: "\n"), in: bytes, from: start) ?? bytes.count
            if end > start { body(Stamp.parse(bytes, from: start)) }
            start = end + 1
        }
    }
}

/// Publishes to Nchan over HTTP (`POST /pub/<channel>`, Nchan's own way in), the stamps and
/// pacing of ``BenchPublisher``: unpaced over `window` keep-alive connections each with one
/// request in flight, paced over one connection per 50 messages a second.
public final class NchanPublisher: @unchecked Sendable {
    let port: Int
    let loop: any EventLoop

    public init(port: Int, loop: any EventLoop) {
        self.port = port
        self.loop = loop
    }

    public func run(keys: [String], window: Int, rate: Int?) async throws -> BenchPublisher.Outcome {
        let state = NchanPublishState(keys: keys, promise: loop.makePromise(), rate: rate, loop: loop)
        let connections = rate.map { max(1, $0 / 50) } ?? max(1, min(window, 64))
        var channels: [any Channel] = []
        for _ in 0..<min(connections, max(1, keys.count)) {
            channels.append(try await ClientBootstrap(group: loop)
                .channelOption(.tcpOption(.tcp_nodelay), value: 1)
                .channelInitializer { ch in
                    ch.eventLoop.makeCompletedFuture {
                        try ch.pipeline.syncOperations.addHTTPClientHandlers()
                        try ch.pipeline.syncOperations.addHandler(NchanPublishHandler(port: self.port, state: state))
                    }
                }
                .connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: port)).get())
        }
        let opened = channels
        loop.execute { state.start(opened) }
        let outcome = try await state.promise.futureResult.get()
        for c in channels { c.close(promise: nil) }
        return outcome
    }
}

/// Shared by one run's publishing connections; touched only on the publisher's loop.
final class NchanPublishState: @unchecked Sendable {
    let keys: [String]
    let promise: EventLoopPromise<BenchPublisher.Outcome>
    let rate: Int?
    let loop: any EventLoop
    var next = 0
    var outcome: BenchPublisher.Outcome
    private var idle: [any Channel] = []

    init(keys: [String], promise: EventLoopPromise<BenchPublisher.Outcome>, rate: Int?, loop: any EventLoop) {
        self.keys = keys
        self.promise = promise
        self.rate = rate
        self.loop = loop
        outcome = BenchPublisher.Outcome(started: BenchClock.now(), finished: 0, confirmed: 0, failed: 0)
    }

    func start(_ channels: [any Channel]) {
        outcome.started = BenchClock.now()
        if keys.isEmpty { return promise.succeed(outcome) }
        guard let rate, rate > 0 else {
            for c in channels { send(on: c) }
            return
        }
        idle = channels
        tick(begin: NIODeadline.now(), interval: .nanoseconds(Int64(1_000_000_000 / rate)))
    }

    /// Paced: one message now, the next at its own deadline (a tick with no connection free
    /// counts that message as failed).
    private func tick(begin: NIODeadline, interval: TimeAmount) {
        guard next < keys.count else { return }
        if let c = idle.popLast() {
            send(on: c)
        } else {
            next += 1
            settle(ok: false)
        }
        loop.scheduleTask(deadline: begin + interval * Int64(next)) { self.tick(begin: begin, interval: interval) }
    }

    /// Sends the next message on `channel`; false when none is left.
    @discardableResult
    func send(on channel: any Channel) -> Bool {
        guard next < keys.count else { return false }
        let seq = next
        next += 1
        var body = channel.allocator.buffer(capacity: 32)
        Stamp(seq: seq, sentNanos: BenchClock.now()).write(to: &body)
        var h = HTTPHeaders()
        h.add(name: "Host", value: "127.0.0.1")
        h.add(name: "Content-Length", value: String(body.readableBytes))
        channel.write(HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .POST, uri: "/pub/\(keys[seq])", headers: h)),
                      promise: nil)
        channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        return true
    }

    /// A publish was answered on `channel`.
    func answered(_ channel: any Channel, ok: Bool) {
        settle(ok: ok)
        if rate == nil { send(on: channel) } else { idle.append(channel) }
    }

    private func settle(ok: Bool) {
        if ok { outcome.confirmed += 1 } else { outcome.failed += 1 }
        if outcome.confirmed + outcome.failed == keys.count {
            outcome.finished = BenchClock.now()
            promise.succeed(outcome)
        }
    }
}

final class NchanPublishHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    let port: Int
    let state: NchanPublishState
    private var status: UInt = 0

    init(port: Int, state: NchanPublishState) {
        self.port = port
        self.state = state
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): status = head.status.code
        case .body: break
        case .end: state.answered(context.channel, ok: status == 201 || status == 202)
        }
    }
}
