import NIOCore
import NIOHTTP1
import NIOPosix

/// A long-polling client of Warren (docs/protocol.md) on one keep-alive connection: creates a
/// session, then polls with `wait` and acks each answer with the next request's cursor.
public enum PollClient {
    /// Completes with the channel once the session exists (its queue is bound then).
    public static func open(
        port: Int, user: String, pattern: String, inbox: Bool = false, wait: Int, index: Int, recorder: Recorder
    ) -> EventLoopFuture<any Channel> {
        dial(port: port, recorder: recorder, name: "poller \(index)") { channel, ready in
            // No outbound header validation, as for Nchan's pollers (NchanPollClient): the bench's
            // requests are well-formed by construction, and NIO's validator reads each request's
            // URI byte by byte, ~0.7 µs per poll here (its URI carries the ~250-byte session
            // string) against ~0.1 µs for Nchan's short path, on the cores the servers share.
            try channel.pipeline.syncOperations.addHTTPClientHandlers(enableOutboundHeaderValidation: false)
            try channel.pipeline.syncOperations.addHandler(
                PollHandler(port: port, user: user, pattern: pattern, inbox: inbox, wait: wait, index: index, recorder: recorder,
                            ready: ready))
        }
    }
}

final class PollHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    let port: Int
    let user: String
    let pattern: String
    let inbox: Bool
    let wait: Int
    let index: Int
    let recorder: Recorder
    let ready: EventLoopPromise<Void>
    private var session: String?
    private var cursor: String?
    private var status: UInt = 0
    private var body = ByteBuffer()

    init(port: Int, user: String, pattern: String, inbox: Bool, wait: Int, index: Int, recorder: Recorder,
         ready: EventLoopPromise<Void>) {
        self.inbox = inbox
        self.port = port
        self.user = user
        self.pattern = pattern
        self.wait = wait
        self.index = index
        self.recorder = recorder
        self.ready = ready
    }

    func channelActive(context: ChannelHandlerContext) {
        let json = #"{"subscriptions":[{"id":"s","pattern":"\#(pattern)","mode":"\#(inbox ? "inbox" : "live")"}]}"#
        request(context, .POST, "/v1/poll?user=\(user)", body: json)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = head.status.code
            body.clear()
        case .body(var part):
            body.writeBuffer(&part)
        case .end:
            answered(context)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if session == nil { ready.fail(BenchError.closed("poller \(index) closed during set-up")) }
    }

    private func answered(_ context: ChannelHandlerContext) {
        let now = BenchClock.now()
        guard session != nil else {
            guard status == 201, let s = body.withUnsafeReadableBytes({ PollAnswer.session($0) }) else {
                ready.fail(BenchError.refused("POST /v1/poll answered \(status): \(String(buffer: body))"))
                context.close(promise: nil)
                return
            }
            session = s
            ready.succeed(())
            poll(context)
            return
        }
        guard status == 200 else {
            recorder.error("poll answered \(status): \(String(buffer: body))")
            context.close(promise: nil)
            return
        }
        recorder.answers += 1
        cursor = body.withUnsafeReadableBytes { bytes in
            PollAnswer.scan(bytes) { recorder.record(client: index, stamp: $0, now: now) }
        }
        poll(context)
    }

    private func poll(_ context: ChannelHandlerContext) {
        guard let session else { return }
        var uri = "/v1/poll/\(session)?user=\(user)&wait=\(wait)"
        if let cursor { uri += "&ack=\(cursor)" }
        request(context, .GET, uri, body: nil)
    }

    private func request(_ context: ChannelHandlerContext, _ method: HTTPMethod, _ uri: String, body: String?) {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "127.0.0.1:\(port)")
        if let body {
            headers.add(name: "Content-Type", value: "application/json")
            headers.add(name: "Content-Length", value: String(body.utf8.count))
        }
        context.write(wrapOutboundOut(.head(HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: headers))), promise: nil)
        if let body {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
