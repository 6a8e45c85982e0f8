import Foundation
import Logging
import NIOCore
import NIOWebSocket
import WarrenCore

/// Serves an open WebSocket on its event loop: the client's frames go to its ``ClientSession``
/// as they are read, and the protocol's own frames (ping, pong, close) are answered here.
///
/// No task and no async stream per socket: a frame that needs no waiting (a publish, an ack,
/// a ping) is handled inside `channelRead`; one that waits for the broker or the store (a
/// subscription, history) is finished in a short-lived task while the frames read after it
/// are held, so a client's requests are still answered in order. Deliveries reach the socket
/// through its ``WebSocketOutput``. Measured (BENCHMARKS.md): served by hummingbird-websocket
/// an idle socket cost ~43 KB of Warren's memory and connects topped out near 1,600/s, most
/// of it the per-connection task and its child tasks.
///
/// RFC 6455 as a server: client frames must be masked and carry no extension bits (close
/// 1002), text must be UTF-8 (1007), a message over `limits.max_frame_bytes` — one frame or
/// fragments together — closes with 1009 (counted as `frame_size`); binary messages are
/// answered `bad_frame` and the socket stays. Pings every ``WebSocketDoor/pingSeconds`` (``PingWheel``); a
/// socket that has sent nothing since the last one is closed. A close from either side is
/// answered and the connection closed; a close Warren starts waits
/// ``WebSocketDoor/closeTimeout`` for the client's answer.
final class WebSocketConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = ByteBuffer

    private let door: WebSocketDoor
    private let admitted: WebSocketDoor.Admitted
    private var logger: Logger
    private var session: ClientSession?
    private var output: WebSocketOutput?
    /// A fragmented message being read: its opcode and the data so far.
    private var fragments: (opcode: WebSocketOpcode, data: ByteBuffer)?
    /// A frame handed back by the session is being finished in a task; frames read meanwhile wait.
    private var busy = false
    private var held: [ByteBuffer] = []
    /// Reading was paused because too many frames were held.
    private var readPaused = false
    private var heardSincePing = true
    private var closeSent = false
    private var ended = false
    /// Set while the handler is in the pipeline (the ping wheel reaches the socket through it).
    private var context: ChannelHandlerContext?
    /// The socket's slot in its loop's ``PingWheel``.
    private var pingSlot: Int?
    private var expiryTimer: Scheduled<Void>?
    private var closeTimer: Scheduled<Void>?

    /// Frames held behind a pending request before reading pauses (TCP pushes back then).
    static let maxHeld = 64

    init(door: WebSocketDoor, admitted: WebSocketDoor.Admitted) {
        self.door = door
        self.admitted = admitted
        logger = door.logger
        logger[metadataKey: "user"] = "\(admitted.identity.user)"
    }

    private var runtime: BridgeRuntime { admitted.runtime }

    // MARK: channel events

    func handlerAdded(context: ChannelHandlerContext) {
        let identity = admitted.identity
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        let limits = runtime.limits
        let output = WebSocketOutput(channel: context.channel, limit: limits.outboundBufferBytes, hardCap: limits.effectiveHardCapBytes,
                                     grace: .seconds(Int64(limits.slowGraceSeconds))) { code, reason in
            // From any thread, once: the close frame is written on the loop, after what was queued.
            loop.execute {
                let (handler, context) = bound.value
                handler.sendClose(context, code: code, reason: reason)
            }
        }
        output.use(self)
        self.output = output
        session = ClientSession(runtime: runtime, user: identity.user, device: identity.device, rules: identity.rules,
                                output: output, via: .ws, logger: logger)
        door.sockets.add(output)
        runtime.metrics.connectionOpened(.ws)
        logger.info("websocket connected", metadata: ["device": "\(identity.device)"])
        self.context = context
        pingSlot = PingWheel.on(loop, period: door.pingSeconds).join(self)
        // A token's expiry holds for the life of the socket (close 4401).
        if let expiresAt = admitted.expiresAt, let delay = Self.delay(until: expiresAt) {
            expiryTimer = loop.scheduleTask(in: delay) {
                output.close(code: CloseCode.tokenExpired, reason: "token expired")
            }
        }
    }

    /// The wait until a token expires, for the close timer; nil when that is further off than a
    /// century (or no time at all). A token's `exp` is whatever its issuer wrote: a "never" such
    /// as 99999999999999999 is more milliseconds than an `Int64` holds (the conversion traps),
    /// and no socket lives a century.
    static func delay(until expiresAt: Date, now: Date = Date()) -> TimeAmount? {
        let seconds = expiresAt.timeIntervalSince(now)
        guard seconds < 100 * 365 * 86_400 else { return nil }
        return .milliseconds(Int64(max(0, seconds) * 1000))
    }

    func channelInactive(context: ChannelHandlerContext) {
        end()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { end() }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent { output?.close(code: CloseCode.goingAway, reason: "server shutting down") }
        // The client closed its side of the connection (a tab killed, a phone's network torn
        // down, a client that dropped TCP without a close frame): it will send nothing more, not
        // even a pong, so the session ends now rather than at the next unanswered ping — its
        // presence goes, its inbox deliveries go back to RabbitMQ, its descriptor is freed.
        if let event = event as? ChannelEvent, event == .inputClosed { context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error as? NIOWebSocketError {
        case .invalidFrameLength?:
            runtime.metrics.limitHit(.ws, .frameSize)
            abort(context, code: CloseCode.tooBig, reason: "frame over limits.max_frame_bytes")
        case .some:
            abort(context, code: 1002, reason: "protocol error")
        case nil:
            context.close(promise: nil)
        }
    }

    // MARK: frames

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        heardSincePing = true
        guard frame.maskKey != nil, !frame.rsv1, !frame.rsv2, !frame.rsv3 else {
            return abort(context, code: 1002, reason: "client frames must be masked and carry no extension bits")
        }
        switch frame.opcode {
        case .text, .binary:
            guard fragments == nil else { return abort(context, code: 1002, reason: "a new message before the last one ended") }
            if frame.fin {
                message(context, frame.opcode, frame.unmaskedData)
            } else {
                fragments = (frame.opcode, frame.unmaskedData)
            }
        case .continuation:
            guard case (let opcode, var data)? = fragments else { return abort(context, code: 1002, reason: "a continuation of nothing") }
            fragments = nil
            var more = frame.unmaskedData
            guard data.readableBytes + more.readableBytes <= door.maxFrameBytes else {
                runtime.metrics.limitHit(.ws, .frameSize)
                return abort(context, code: CloseCode.tooBig, reason: "message over limits.max_frame_bytes")
            }
            data.writeBuffer(&more)
            if frame.fin { message(context, opcode, data) } else { fragments = (opcode, data) }
        case .ping:
            guard !closeSent else { return }
            context.writeAndFlush(wrapOutboundOut(WebSocketWireFrame.encode(frame.unmaskedData, opcode: WebSocketWireFrame.pong)), promise: nil)
        case .pong:
            break
        case .connectionClose:
            closeReceived(context, frame.unmaskedData)
        default:
            abort(context, code: 1002, reason: "unknown opcode")
        }
    }

    /// A whole message from the client.
    private func message(_ context: ChannelHandlerContext, _ opcode: WebSocketOpcode, _ data: ByteBuffer) {
        guard !closeSent, let session else { return }
        guard opcode == .text else {
            return session.fail(ProtocolError(.badFrame, "binary frames are not accepted: send JSON text frames", ref: nil))
        }
        guard Self.isUTF8(data) else { return abort(context, code: 1007, reason: "text frames must be UTF-8") }
        if busy {
            held.append(data)
            if held.count >= Self.maxHeld, !readPaused {
                readPaused = true
                context.channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in }
            }
            return
        }
        take(context, data, session)
    }

    /// Hands a text frame to the session; one it cannot answer at once is finished in a task.
    private func take(_ context: ChannelHandlerContext, _ data: ByteBuffer, _ session: ClientSession) {
        guard let pending = session.receive(data) else { return }
        busy = true
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        Task {
            await session.complete(pending)
            loop.execute {
                let (handler, context) = bound.value
                handler.finished(context)
            }
        }
    }

    /// The pending request is answered: the frames held behind it go on.
    private func finished(_ context: ChannelHandlerContext) {
        busy = false
        guard let session, !ended else { return }
        while !busy, !held.isEmpty, !closeSent {
            take(context, held.removeFirst(), session)
        }
        if !busy, readPaused {
            readPaused = false
            context.channel.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in }
        }
    }

    // MARK: keepalive and closing

    /// From the loop's ``PingWheel``, once per ping period.
    func pingTick() {
        guard let context, !closeSent else { return }
        guard heardSincePing else {
            return abort(context, code: CloseCode.goingAway, reason: "no answer to ping")
        }
        heardSincePing = false
        context.writeAndFlush(wrapOutboundOut(Self.pingFrame), promise: nil)
    }

    /// The close Warren starts (through ``WebSocketOutput/close(code:reason:)``): the close
    /// frame, then the client has ``WebSocketDoor/closeTimeout`` to answer.
    private func sendClose(_ context: ChannelHandlerContext, code: UInt16, reason: String) {
        guard !closeSent, context.channel.isActive else { return }
        writeClose(context, code: code, reason: reason)
        let channel = context.channel
        closeTimer = context.eventLoop.scheduleTask(in: door.closeTimeout) { channel.close(promise: nil) }
    }

    /// The client's close: answered with its code, then the connection closes. A close frame
    /// the RFC does not allow (§5.5.1, §7.4: a one-byte body, a code no endpoint may send, a
    /// reason that is not UTF-8) is answered 1002 or 1007 instead of echoed.
    private func closeReceived(_ context: ChannelHandlerContext, _ data: ByteBuffer) {
        output?.close(code: 1000, reason: "")  // nothing more is sent
        if !closeSent {
            switch Self.checkClose(data) {
            case .valid(let code): writeClose(context, code: code, reason: "")
            case .invalid(let code, let reason): writeClose(context, code: code, reason: reason)
            }
        }
        context.close(promise: nil)
    }

    enum CloseCheck: Equatable {
        /// The code to echo (nil: the client's close had no body).
        case valid(UInt16?)
        case invalid(UInt16, String)
    }

    /// What a client's close frame body holds (RFC 6455 §5.5.1, §7.4.1, and the IANA registry).
    static func checkClose(_ data: ByteBuffer) -> CloseCheck {
        guard data.readableBytes > 0 else { return .valid(nil) }
        guard let code = data.getInteger(at: data.readerIndex, as: UInt16.self) else {
            return .invalid(1002, "a close body of one byte")
        }
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: break
        default: return .invalid(1002, "close code \(code) may not be sent")
        }
        guard isUTF8(data.getSlice(at: data.readerIndex + 2, length: data.readableBytes - 2) ?? ByteBuffer()) else {
            return .invalid(1007, "the close reason must be UTF-8")
        }
        return .valid(code)
    }

    /// A broken protocol or a dead peer: the close frame and the connection closed, no waiting.
    private func abort(_ context: ChannelHandlerContext, code: UInt16, reason: String) {
        output?.close(code: code, reason: reason)
        if !closeSent { writeClose(context, code: code, reason: reason) }
        context.close(promise: nil)
    }

    private func writeClose(_ context: ChannelHandlerContext, code: UInt16?, reason: String) {
        closeSent = true
        output?.closeFrameWritten()
        var data = ByteBuffer()
        if let code {
            data.writeInteger(code)
            data.writeString(String(decoding: reason.utf8.prefix(123), as: UTF8.self))
        }
        context.writeAndFlush(wrapOutboundOut(WebSocketWireFrame.encode(data, opcode: WebSocketWireFrame.close)), promise: nil)
    }

    /// The socket is gone: its session ends (live subscriptions dropped, inbox deliveries
    /// handed back), its slot and counts released. Once.
    private func end() {
        guard !ended else { return }
        ended = true
        if let pingSlot, let context { PingWheel.on(context.eventLoop, period: door.pingSeconds).leave(self, slot: pingSlot) }
        pingSlot = nil
        context = nil
        expiryTimer?.cancel()
        closeTimer?.cancel()
        held.removeAll()
        guard let session, let output else { return }
        // The output's close closure holds this handler (and its context): let go of the
        // output and the session, or the three and the channel they hold outlive the socket.
        self.session = nil
        self.output = nil
        output.use(nil)
        door.sockets.remove(output)
        runtime.users.closeConnection(admitted.identity.user)
        runtime.metrics.connectionClosed(.ws)
        logger.info("websocket disconnected")
        Task { await session.end() }
    }

    static let pingFrame = WebSocketWireFrame.encode(ByteBuffer(), opcode: WebSocketWireFrame.ping)

    /// Writes an encoded frame without flushing (``WebSocketOutput``); false once the socket
    /// has ended. On the loop.
    func write(_ frame: ByteBuffer) -> Bool {
        guard let context else { return false }
        context.write(wrapOutboundOut(frame), promise: nil)
        return true
    }

    func flush() { context?.flush() }

    /// Whether `data` is UTF-8; ASCII (the common case) is checked without decoding.
    static func isUTF8(_ data: ByteBuffer) -> Bool {
        data.withUnsafeReadableBytes { bytes in
            bytes.allSatisfy { $0 < 0x80 } || String(validating: bytes, as: UTF8.self) != nil
        }
    }
}
