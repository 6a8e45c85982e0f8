import Logging
import NIOCore

/// The thin NIO handler that performs what the state machines decide.
///
/// It frames bytes, feeds frames to ``ConnectionStateMachine`` (channel 0) or the
/// right ``ChannelStateMachine``, and carries out their actions: writes, promise
/// completions, deliveries to sinks. It never decides protocol questions itself.
final class AMQPConnectionHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = AMQPCommand
    typealias OutboundOut = ByteBuffer

    private var connection: ConnectionStateMachine
    private var channels: [UInt16: ChannelStateMachine] = [:]
    private var negotiated: NegotiatedParameters?
    private var readBuffer: ByteBuffer?
    private var writeBuffer: ByteBuffer
    private var needsFlush = false
    private var flushScheduled = false
    private var heartbeatTask: RepeatedTask?
    private var closeTimeout: Scheduled<Void>?
    private var finalError: AMQPError?
    private var context: ChannelHandlerContext?
    private let logger: Logger
    let epoch: UInt64
    let events: AMQPLinkEvents
    /// Completes when the handshake finished (or failed).
    let established: EventLoopPromise<NegotiatedParameters>
    /// Succeeds with the reason once the connection is gone, whatever the reason.
    let ended: EventLoopPromise<AMQPError>

    init(configuration: ConnectionStateMachine.Configuration, epoch: UInt64, events: AMQPLinkEvents,
         eventLoop: EventLoop, logger: Logger) {
        self.connection = ConnectionStateMachine(configuration: configuration, now: .now())
        self.epoch = epoch
        self.events = events
        self.logger = logger
        self.established = eventLoop.makePromise()
        self.ended = eventLoop.makePromise()
        self.writeBuffer = ByteBufferAllocator().buffer(capacity: 4096)
    }

    // MARK: lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        if case .sendProtocolHeader = connection.connected() {
            var header = context.channel.allocator.buffer(capacity: 8)
            header.writeBytes(AMQPFrame.protocolHeader)
            context.writeAndFlush(wrapOutboundOut(header), promise: nil)
            connection.bytesWritten(now: .now())
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        let error = finalError ?? connection.socketClosed()
        tearDown(error: error)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        logger.debug("AMQP socket error", metadata: ["error": "\(error)"])
        perform(connection.socketError("\(error)"), context: context)
    }

    private func tearDown(error: AMQPError) {
        heartbeatTask?.cancel()
        heartbeatTask = nil
        closeTimeout?.cancel()
        closeTimeout = nil
        let open = channels
        channels.removeAll()
        for (id, var machine) in open {
            perform(machine.connectionClosed(error, keepConsumers: true), channel: id, context: nil)
        }
        established.fail(error)
        ended.succeed(error)
    }

    // MARK: inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let bytes = unwrapInboundIn(data)
        connection.bytesRead(now: .now())
        if readBuffer == nil || readBuffer!.readableBytes == 0 {
            readBuffer = bytes
        } else {
            readBuffer!.writeImmutableBuffer(bytes)
        }
        while finalError == nil, readBuffer != nil {
            let frame: AMQPFrame?
            do {
                frame = try AMQPFrame.decode(from: &readBuffer!, maxFrameSize: connection.maxFrameSize)
            } catch {
                readBuffer = nil
                logger.warning("AMQP protocol error from broker", metadata: ["error": "\(error)"])
                perform(connection.protocolError(error), context: context)
                break
            }
            guard let frame else { break }
            handle(frame, context: context)
        }
        if let buffer = readBuffer, buffer.readerIndex > 65536 {
            readBuffer!.discardReadBytes()
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushIfNeeded(context: context)
        context.fireChannelReadComplete()
    }

    private func handle(_ frame: AMQPFrame, context: ChannelHandlerContext) {
        let channelID = frame.channel
        if channelID == 0 {
            perform(connection.frameReceived(frame), context: context)
            return
        }
        guard connection.isOpen else {
            if case .closing = connection.state { return }
            perform(connection.channelFrameBeforeOpen(channelID), context: context)
            return
        }
        guard let action = withChannel(channelID, { $0.frameReceived(frame) }) else {
            perform(connection.protocolError(.channelNotOpen(channelID)), context: context)
            return
        }
        perform(action, channel: channelID, context: context)
    }

    /// Runs `body` on channel `id`'s state machine where it lives in `channels`; nil when there
    /// is no such channel. Copying a machine out and storing it back would make its buffers
    /// shared for the mutation, and so copied: O(unconfirmed publishes) per publish and confirm.
    /// One lookup, no copy (`channels[id] != nil` copied the whole machine out to test it: a
    /// copy and a destroy per frame read, 1.3 % of Warren's samples in the inbox benchmark).
    private func withChannel<R>(_ id: UInt16, _ body: (inout ChannelStateMachine) -> R) -> R? {
        guard let index = channels.index(forKey: id) else { return nil }
        return body(&channels.values[index])
    }

    // MARK: outbound commands

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        promise?.succeed(())
        take(unwrapOutboundIn(data), context: context)
    }

    private func take(_ command: AMQPCommand, context: ChannelHandlerContext) {
        let notOpen: AMQPError = finalError ?? .notConnected
        switch command {
        case .batch(let commands):
            for command in commands { take(command, context: context) }
        case .openChannel(let id, let p):
            guard connection.isOpen else { return p.fail(notOpen) }
            if let existing = channels[id], !existing.isClosed { return p.fail(AMQPError.invalidArgument("channel \(id) is in use")) }
            var machine = ChannelStateMachine(id: id, epoch: epoch)
            let action = machine.open(promise: p)
            channels[id] = machine
            perform(action, channel: id, context: context)
        case .request(let id, let method, let sink, let p):
            guard connection.isOpen else { return p.fail(notOpen) }
            guard let action = withChannel(id, { $0.request(method, promise: p, sink: sink) }) else {
                return p.fail(AMQPError.channelNotOpen(id))
            }
            perform(action, channel: id, context: context)
        case .publish(let id, let publish, let properties, let body, let p):
            guard connection.isOpen, let frameMax = negotiated?.frameMax else { return p.fail(notOpen) }
            let action = withChannel(id) {
                $0.publish(publish, properties: properties, body: body, frameMax: frameMax, promise: p)
            }
            guard let action else { return p.fail(AMQPError.channelNotOpen(id)) }
            perform(action, channel: id, context: context)
        case .send(let id, let method):
            guard connection.isOpen, let action = withChannel(id, { $0.send(method) }) else { return }
            perform(action, channel: id, context: context)
        case .closeChannel(let id, let p):
            guard connection.isOpen, let action = withChannel(id, { $0.close(promise: p) }) else {
                return p.succeed(.method(.channelCloseOk))
            }
            perform(action, channel: id, context: context)
        case .close(let p):
            ended.futureResult.whenComplete { _ in p.succeed(()) }
            perform(connection.close(), context: context)
            scheduleCloseTimeout(context: context, after: .seconds(5))
        }
    }

    /// A flush waits for the end of the event loop's current work: the publishes, acks and
    /// replies written meanwhile (a publisher's burst, a batch of acks) leave in one write, not
    /// in one syscall each.
    func flush(context: ChannelHandlerContext) {
        guard needsFlush, !flushScheduled else { return }
        flushScheduled = true
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (handler, context) = loopBound.value
            handler.flushScheduled = false
            handler.flushIfNeeded(context: context)
        }
    }

    // MARK: performing actions

    private func perform(_ action: ConnectionStateMachine.Action, context: ChannelHandlerContext) {
        switch action {
        case .none:
            break
        case .sendProtocolHeader:
            start(context: context)
        case .send(let frames):
            write(frames, context: context)
            if case .closing = connection.state { scheduleCloseTimeout(context: context, after: .seconds(2)) }
        case .established(let params):
            negotiated = params
            startHeartbeats(params, context: context)
            established.succeed(params)
        case .closeSocket(let frames, let error):
            finalError = error
            write(frames, context: context)
            flushIfNeeded(context: context)
            context.close(promise: nil)
        case .blockedChanged(let reason):
            events.blockedChanged(reason)
        }
    }

    private func perform(_ action: ChannelStateMachine.Action, channel id: UInt16, context: ChannelHandlerContext?) {
        switch action {
        case .none:
            break
        case .send(let frame):
            if let context { write(frame, context: context) }
        case .sendPublish(let frames, let completeOnWrite):
            guard let context else { completeOnWrite?.fail(AMQPError.notConnected); return }
            if case .send(let out) = connection.outboundPublish(frames) { write(out, context: context) }
            completeOnWrite?.succeed(())
        case .succeed(let promise, let response):
            promise.succeed(response)
        case .fail(let promise, let error):
            promise.fail(error)
        case .failPublish(let promise, let error):
            promise.fail(error)
        case .deliver(let sink, let message):
            sink.deliver(message)
        case .returned(let message):
            events.returned(id, message)
        case .confirm(let promises, let error):
            if let error { promises.forEach { $0.fail(error) } } else { promises.forEach { $0.succeed(()) } }
        case .finishConsumer(let sink, let error):
            sink.finish(error)
        case .closed(let closed):
            if let reply = closed.reply, let context { write([reply], context: context) }
            channels[id] = nil
            closed.rpcs.forEach { $0.fail(closed.error) }
            closed.publishes.forEach { $0.fail(closed.error) }
            closed.closePromise?.succeed(.method(.channelCloseOk))
            closed.consumers.forEach { $0.finish(closed.consumerError) }
            if case .channelClosed = closed.error, context != nil {
                logger.info("AMQP channel closed by broker", metadata: ["channel": "\(id)", "reason": "\(closed.error)"])
                events.channelClosed(id, closed.error)
            }
        case .connectionError(let error):
            logger.warning("AMQP protocol error from broker", metadata: ["channel": "\(id)", "error": "\(error)"])
            if let context { perform(connection.protocolError(error), context: context) }
        case .multiple(let actions):
            for a in actions { perform(a, channel: id, context: context) }
        }
    }

    // MARK: writing

    private func write(_ frames: [AMQPFrame], context: ChannelHandlerContext) {
        for frame in frames { write(frame, context: context) }
    }

    /// One frame into the write buffer (no array for the one frame of an ack or a reply).
    private func write(_ frame: AMQPFrame, context: ChannelHandlerContext) {
        let mark = writeBuffer.writerIndex
        do {
            try frame.encode(into: &writeBuffer)
        } catch {
            // Arguments are validated before they reach us; this is a bug, not input.
            writeBuffer.moveWriterIndex(to: mark)
            logger.error("AMQP frame could not be encoded", metadata: ["error": "\(error)"])
        }
        needsFlush = true
    }

    private func flushIfNeeded(context: ChannelHandlerContext) {
        guard needsFlush else { return }
        needsFlush = false
        if writeBuffer.readableBytes > 0 {
            let out = writeBuffer
            writeBuffer = context.channel.allocator.buffer(capacity: 4096)
            context.write(wrapOutboundOut(out), promise: nil)
            connection.bytesWritten(now: .now())
        }
        context.flush()
    }

    // MARK: timers

    private func startHeartbeats(_ params: NegotiatedParameters, context: ChannelHandlerContext) {
        guard params.heartbeat > 0 else { return }
        let tick = TimeAmount.milliseconds(max(50, Int64(params.heartbeat) * 125))
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        heartbeatTask = context.eventLoop.scheduleRepeatedTask(initialDelay: tick, delay: tick) { _ in
            let (handler, context) = loopBound.value
            handler.heartbeatTick(context: context)
        }
    }

    private func heartbeatTick(context: ChannelHandlerContext) {
        switch connection.heartbeatTick(now: .now()) {
        case .none:
            break
        case .sendHeartbeat:
            write([.heartbeat], context: context)
            flushIfNeeded(context: context)
        case .peerDead:
            logger.warning("AMQP broker missed two heartbeats; dropping the connection")
            perform(connection.heartbeatTimedOut(), context: context)
        }
    }

    private func scheduleCloseTimeout(context: ChannelHandlerContext, after delay: TimeAmount) {
        flushIfNeeded(context: context)
        guard closeTimeout == nil else { return }
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        closeTimeout = context.eventLoop.scheduleTask(in: delay) {
            loopBound.value.close(promise: nil)
        }
    }
}

extension ChannelStateMachine {
    var isClosed: Bool { if case .closed = state { return true } else { return false } }
}
