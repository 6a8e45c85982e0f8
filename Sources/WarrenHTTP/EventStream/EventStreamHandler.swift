import Foundation
import Logging
import NIOCore
import WarrenCore

/// Serves an open event stream on its event loop: its ``ClientSession`` subscribes to the
/// stream's patterns (with its `since`), and deliveries go out through its
/// ``EventStreamOutput``. What the client sends after its request is read and dropped; a
/// comment every ``EventStreamDoor/heartbeatSeconds``; the stream closes at its token's expiry,
/// on a drain, when the client is too far behind (slow consumer), or when the client goes.
final class EventStreamHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let door: EventStreamDoor
    private let admitted: EventStreamDoor.Admitted
    private let ask: EventStreamDoor.Ask
    private var logger: Logger
    private var session: ClientSession?
    private var output: EventStreamOutput?
    private var heartbeat: RepeatedTask?
    private var expiryTimer: Scheduled<Void>?
    private var ended = false

    init(door: EventStreamDoor, admitted: EventStreamDoor.Admitted, ask: EventStreamDoor.Ask) {
        self.door = door
        self.admitted = admitted
        self.ask = ask
        logger = door.logger
        logger[metadataKey: "user"] = "\(admitted.identity.user)"
    }

    private var runtime: BridgeRuntime { admitted.runtime }

    func handlerAdded(context: ChannelHandlerContext) {
        let identity = admitted.identity
        let output = EventStreamOutput(channel: context.channel, maxBufferedBytes: runtime.limits.outboundBufferBytes)
        let session = ClientSession(runtime: runtime, user: identity.user, device: identity.device, rules: identity.rules,
                                    output: output, via: .poll, frontend: .sse, logger: logger)
        self.output = output
        self.session = session
        door.sockets.add(output)
        runtime.metrics.connectionOpened(.sse)
        let seconds = Int64(door.heartbeatSeconds)
        heartbeat = context.eventLoop.scheduleRepeatedTask(initialDelay: .seconds(seconds), delay: .seconds(seconds)) { _ in
            _ = output.write(EventStreamEncoding.heartbeat)
        }
        if let expiresAt = admitted.expiresAt, let delay = WebSocketConnectionHandler.delay(until: expiresAt) {
            expiryTimer = context.eventLoop.scheduleTask(in: delay) { output.close(code: CloseCode.tokenExpired, reason: "token expired") }
        }
        let (patterns, since) = (ask.patterns, ask.since)
        Task {
            for pattern in patterns {
                do {
                    try await session.subscribe(id: pattern.value, pattern: pattern, mode: .live, since: since) { start in
                        _ = output.send(ByteBuffer(bytes: ServerFrame.subscribed(id: pattern.value, pattern: pattern.value, mode: .live,
                                                                                 start: start)))
                    }
                } catch let error as ProtocolError {
                    // Said in the stream, which goes on with the other patterns.
                    session.fail(error)
                } catch {}
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A stream's client has nothing more to say: read and dropped, so it costs nothing.
    }

    func channelInactive(context: ChannelHandlerContext) {
        end()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) { end() }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent { output?.close(code: CloseCode.goingAway, reason: "server shutting down") }
        // The client closed its side: it is gone (a stream is read to its end, never half-closed).
        if let event = event as? ChannelEvent, event == .inputClosed { context.close(promise: nil) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }

    /// The stream is gone: its session ends, its slot and counts are released. Once.
    private func end() {
        guard !ended else { return }
        ended = true
        heartbeat?.cancel()
        expiryTimer?.cancel()
        guard let session, let output else { return }
        self.session = nil
        self.output = nil
        door.sockets.remove(output)
        door.admission.release(admitted)
        runtime.metrics.connectionClosed(.sse)
        Task { await session.end() }
    }
}
