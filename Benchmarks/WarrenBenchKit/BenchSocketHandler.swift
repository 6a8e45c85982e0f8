import NIOCore
import NIOWebSocket

/// One benchmark socket after the upgrade: subscribes, then records every delivery.
final class BenchSocketHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let index: Int
    let dialect: SocketDialect
    let recorder: Recorder
    let ready: EventLoopPromise<Void>
    private var isReady = false
    private var fragments: ByteBuffer?
    /// Inbox deliveries not yet acked: acked together at the end of a read once there are
    /// `ackEvery` of them.
    private var pendingAcks: [String] = []
    /// Whether anything was written since the last flush: a flush with nothing to write still
    /// costs NIO a trip to the socket, and most reads here write nothing.
    private var needsFlush = false
    /// The flooder's timer.
    private var flood: RepeatedTask?
    private var floodSent = 0
    /// A publisher's progress: publishes sent, and when the one awaiting its acknowledgement went.
    private var published = 0
    private var publishedAt: UInt64 = 0

    init(index: Int, dialect: SocketDialect, recorder: Recorder, ready: EventLoopPromise<Void>) {
        self.index = index
        self.dialect = dialect
        self.recorder = recorder
        self.ready = ready
    }

    func handlerAdded(context: ChannelHandlerContext) {
        switch dialect {
        case .warren(let pattern, let ackEvery):
            send(context, #"{"op":"sub","id":"s","pattern":"\#(pattern)","mode":"\#(ackEvery != nil ? "inbox" : "live")"}"#)
        case .presence(let route):
            send(context, #"{"op":"sub","id":"s","pattern":"\#(route)","mode":"live","presence":true}"#)
        case .stomp, .idleStomp, .publishStomp:
            send(context, "CONNECT\naccept-version:1.2\nhost:/\nlogin:guest\npasscode:guest\nheart-beat:0,0\n\n\0")
        case .idleWarren, .publishWarren:
            markReady()
        case .flood(let route, let perTick):
            markReady()
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            flood = context.eventLoop.scheduleRepeatedTask(initialDelay: .milliseconds(10), delay: .milliseconds(10)) { _ in
                let (handler, context) = bound.value
                for _ in 0..<perTick {
                    handler.send(context, #"{"op":"pub","route":"\#(route)","body":"flood","cid":"f\#(handler.floodSent)"}"#)
                    handler.floodSent += 1
                }
                context.flush()
            }
        case .hoard(let count):
            for i in 0..<count { send(context, #"{"op":"sub","id":"h\#(i)","pattern":"room.h\#(i)"}"#) }
            markReady()
        }
        context.flush()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary, .continuation:
            if !frame.fin || fragments != nil {
                var data = frame.unmaskedData
                if fragments == nil { fragments = data } else { fragments!.writeBuffer(&data) }
                guard frame.fin, let whole = fragments else { return }
                fragments = nil
                handle(context, whole)
            } else {
                handle(context, frame.data)
            }
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.write(wrapOutboundOut(pong), promise: nil)
            needsFlush = true
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if case .warren(_, let ackEvery?) = dialect, pendingAcks.count >= ackEvery {
            var text = #"{"op":"ack","ids":["#
            for (i, id) in pendingAcks.enumerated() {
                if i > 0 { text += "," }
                text += "\"" + id + "\""
            }
            text += "]}"
            pendingAcks.removeAll(keepingCapacity: true)
            send(context, text)
        }
        if needsFlush {
            needsFlush = false
            context.flush()
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is BenchStart else { return context.fireUserInboundEventTriggered(event) }
        publishNext(context)
        context.flush()
        needsFlush = false
    }

    /// A publisher's next publish, if any is left.
    private func publishNext(_ context: ChannelHandlerContext) {
        let (count, firstSeq): (Int, Int)
        switch dialect {
        case .publishWarren(_, let c, let f), .publishStomp(_, let c, let f): (count, firstSeq) = (c, f)
        default: return
        }
        guard published < count else { return }
        publishedAt = BenchClock.now()
        let stamp = "\(firstSeq + published).\(publishedAt)"
        switch dialect {
        case .publishWarren(let route, _, _):
            send(context, #"{"op":"pub","route":"\#(route)","body":"\#(stamp)","cid":"c\#(published)"}"#)
        case .publishStomp(let destination, _, _):
            send(context, "SEND\ndestination:\(destination)\nreceipt:\(published)\npersistent:true\ncontent-type:text/plain\n\n\(stamp)\0")
        default: break
        }
        published += 1
    }

    /// A publish acknowledged (or refused): recorded, and the next one sent.
    private func acknowledged(_ context: ChannelHandlerContext, now: UInt64, refused: String?) {
        if let refused { recorder.error(refused) } else {
            recorder.record(client: index, stamp: Stamp(seq: published - 1, sentNanos: publishedAt), now: now)
        }
        publishNext(context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        flood?.cancel()
        if !isReady { ready.fail(BenchError.closed("socket \(index) closed during set-up")) }
    }

    private func markReady() {
        guard !isReady else { return }
        isReady = true
        ready.succeed(())
    }

    private func handle(_ context: ChannelHandlerContext, _ data: ByteBuffer) {
        let now = BenchClock.now()
        data.withUnsafeReadableBytes { bytes in
            switch dialect {
            case .warren(_, let ackEvery):
                switch WarrenFrame.scan(bytes, wantID: ackEvery != nil) {
                case .message(let stamp, let id):
                    recorder.record(client: index, stamp: stamp, now: now)
                    if let id { pendingAcks.append(id) }
                case .subscribed: markReady()
                case .error(let text):
                    if isReady { recorder.error(text) } else { ready.fail(BenchError.refused(text)) }
                case .puback, .other: break
                }
            case .presence:
                if !isReady, case .subscribed = WarrenFrame.scan(bytes, wantID: false) { markReady() }
            case .publishWarren:
                switch WarrenFrame.scan(bytes, wantID: false) {
                case .puback: acknowledged(context, now: now, refused: nil)
                case .error(let text): acknowledged(context, now: now, refused: text)
                default: break
                }
            case .publishStomp:
                StompScan.frames(bytes) { command, _ in
                    switch command {
                    case .connected: markReady()
                    case .receipt: acknowledged(context, now: now, refused: nil)
                    case .error: acknowledged(context, now: now, refused: String(decoding: bytes, as: UTF8.self))
                    default: break
                    }
                }
            case .idleWarren, .flood, .hoard:
                break
            case .stomp, .idleStomp:
                StompScan.frames(bytes) { command, body in
                    switch command {
                    case .message:
                        recorder.record(client: index, stamp: Stamp.parse(bytes, from: body.lowerBound), now: now)
                    case .connected:
                        if case .stomp(let destination) = dialect {
                            send(context, "SUBSCRIBE\nid:s\ndestination:\(destination)\nack:auto\nreceipt:r\n\n\0")
                        } else {
                            markReady()
                        }
                    case .receipt: markReady()
                    case .error:
                        let text = String(decoding: bytes, as: UTF8.self)
                        if isReady { recorder.error(text) } else { ready.fail(BenchError.refused(text)) }
                    case .other: break
                    }
                }
            }
        }
    }

    private func send(_ context: ChannelHandlerContext, _ text: String) {
        let frame = WebSocketFrame(fin: true, opcode: .text, maskKey: .random(),
                                   data: context.channel.allocator.buffer(string: text))
        context.write(wrapOutboundOut(frame), promise: nil)
        needsFlush = true
    }
}
