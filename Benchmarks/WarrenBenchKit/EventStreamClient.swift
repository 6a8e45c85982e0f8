import NIOCore
import NIOHTTP1
import NIOPosix

/// A Server-Sent Events subscriber on one connection: `GET path` with
/// `Accept: text/event-stream`, then every event's `data:` read for its ``Stamp`` — the
/// envelope's `body` for Warren (`GET /v1/sse`), the bare body for Nchan's `eventsource`
/// subscriber, the anchor of Warren's SSE door.
public enum EventStreamClient {
    /// What tells the subscriber it is in effect.
    public enum Ready: Sendable {
        /// Warren: the `subscribed` control event (its subscriptions are bound then).
        case subscribedEvent
        /// Nchan: the `200` head (the bench's Nchan starts subscribers at the oldest buffered
        /// message, so nothing published after the request is missed).
        case head
    }

    public static func open(port: Int, path: String, ready: Ready, index: Int, recorder: Recorder) -> EventLoopFuture<any Channel> {
        dial(port: port, recorder: recorder, name: "event stream \(index)") { channel, promise in
            try channel.pipeline.syncOperations.addHTTPClientHandlers(enableOutboundHeaderValidation: false)
            try channel.pipeline.syncOperations.addHandler(
                EventStreamHandler(port: port, path: path, readyOn: ready, index: index, recorder: recorder, ready: promise))
        }
    }
}

final class EventStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    let port: Int
    let path: String
    let readyOn: EventStreamClient.Ready
    let index: Int
    let recorder: Recorder
    let ready: EventLoopPromise<Void>
    private var isReady = false
    /// Bytes of an event not yet ended by its blank line.
    private var pending = ByteBuffer()

    init(port: Int, path: String, readyOn: EventStreamClient.Ready, index: Int, recorder: Recorder, ready: EventLoopPromise<Void>) {
        self.port = port
        self.path = path
        self.readyOn = readyOn
        self.index = index
        self.recorder = recorder
        self.ready = ready
    }

    func channelActive(context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "127.0.0.1:\(port)")
        headers.add(name: "Accept", value: "text/event-stream")
        context.write(wrapOutboundOut(.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            guard head.status == .ok else {
                fail(context, "GET \(path) answered \(head.status.code)")
                return
            }
            if case .head = readyOn { markReady() }
        case .body(var part):
            if pending.readableBytes == 0 { pending = part } else { pending.writeBuffer(&part) }
            scan()
        case .end:
            // The server ended the stream (or the bench closed it): nothing more comes.
            if !isReady { fail(context, "the stream \(path) ended before it was ready") }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !isReady { ready.fail(BenchError.closed("event stream \(index) closed during set-up")) }
    }

    /// Reads every complete event in `pending`, keeping what follows the last blank line.
    private func scan() {
        let now = BenchClock.now()
        let consumed = pending.withUnsafeReadableBytes { bytes -> Int in
            var start = 0
            while let end = find("\n\n", in: bytes, from: start) {
                event(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), now: now)
                start = end + 2
            }
            return start
        }
        pending.moveReaderIndex(forwardBy: consumed)
        if pending.readableBytes == 0 { pending.clear() }
    }

    /// One event: a comment, a control event (Warren's `subscribed`) or a message.
    private func event(_ bytes: UnsafeRawBufferPointer, now: UInt64) {
        guard let data = find("data: ", in: bytes) else { return }   // a comment or `retry:`
        if find("event: control", in: bytes) != nil {
            if find(#""op":"subscribed""#, in: bytes) != nil { markReady() } else if isReady { recorder.error(String(decoding: bytes, as: UTF8.self)) }
            return
        }
        if bytes.count > data + 6, bytes[data + 6] == UInt8(ascii: "{") {
            let stamp = find(#""body":""#, in: bytes, from: data).flatMap { Stamp.parse(bytes, from: $0 + 8) }
            recorder.record(client: index, stamp: stamp, now: now)
        } else {
            recorder.record(client: index, stamp: Stamp.parse(bytes, from: data + 6), now: now)
        }
    }

    private func markReady() {
        guard !isReady else { return }
        isReady = true
        ready.succeed(())
    }

    private func fail(_ context: ChannelHandlerContext, _ text: String) {
        if isReady { recorder.error(text) } else { ready.fail(BenchError.refused(text)) }
        context.close(promise: nil)
    }
}
