import NIOCore

/// One AMQP channel as a pure value: requests and frames in, actions out.
///
/// Synchronous requests are pipelined and matched to their replies in order
/// (AMQP answers them in order per channel). It assembles content (method,
/// header, body frames), tracks publisher confirms by sequence number, and owns
/// the consumers registered on it.
public struct ChannelStateMachine: Sendable {
    public enum State: Sendable {
        case opening
        case open
        /// We sent `channel.close`.
        case closing
        case closed(AMQPError)
    }

    public enum Action: Sendable {
        case none
        case send(AMQPFrame)
        /// Frames of a publish; when `completeOnWrite` is set (no confirm mode) it succeeds once written.
        case sendPublish([AMQPFrame], completeOnWrite: EventLoopPromise<Void>?)
        case succeed(EventLoopPromise<RPCResponse>, RPCResponse)
        case fail(EventLoopPromise<RPCResponse>, AMQPError)
        case failPublish(EventLoopPromise<Void>, AMQPError)
        case deliver(AMQPDeliverySink, AMQPMessage)
        case returned(AMQPReturnedMessage)
        /// Publisher confirms: succeed (error nil) or fail (nack) these publishes.
        case confirm([EventLoopPromise<Void>], error: AMQPError?)
        case finishConsumer(AMQPDeliverySink, AMQPError?)
        /// The channel is gone: fail what waited, end (or keep, for recovery) its consumers.
        case closed(ClosedChannel)
        /// The peer broke the protocol: the connection must close with this error.
        case connectionError(AMQPProtocolError)
        case multiple([Action])
    }

    public struct ClosedChannel: Sendable {
        public var error: AMQPError
        /// A frame to send before forgetting the channel (`close-ok` for a server close).
        public var reply: AMQPFrame?
        public var rpcs: [EventLoopPromise<RPCResponse>]
        public var publishes: [EventLoopPromise<Void>]
        /// Consumers to finish with `consumerError` (nil: ended normally).
        public var consumers: [AMQPDeliverySink]
        public var consumerError: AMQPError?
        /// Set when the user closed the channel.
        public var closePromise: EventLoopPromise<RPCResponse>?
    }

    struct PendingRPC: Sendable {
        var request: AMQPMethod
        var promise: EventLoopPromise<RPCResponse>
        var sink: AMQPDeliverySink?
    }

    enum ContentKind: Sendable {
        case deliver(BasicDeliver)
        case getOk(BasicGetOk)
        case returned(BasicReturn)
    }

    enum Content: Sendable {
        case idle
        case awaitingHeader(ContentKind)
        case awaitingBody(ContentKind, ContentHeader, ByteBuffer?)
    }

    public let id: UInt16
    /// The connection generation, stamped into every delivery tag.
    public let epoch: UInt64
    public private(set) var state: State = .opening
    public private(set) var confirmMode = false
    private var nextPublishSeq: UInt64 = 1
    private var unconfirmed = CircularBuffer<(seq: UInt64, promise: EventLoopPromise<Void>)>()
    private var pending = CircularBuffer<PendingRPC>()
    private var consumers: [String: AMQPDeliverySink] = [:]
    private var content: Content = .idle
    private var closePromise: EventLoopPromise<RPCResponse>?
    /// Bodies larger than this are a protocol error (a hostile size must not make us allocate).
    let maxBodySize: UInt64

    public init(id: UInt16, epoch: UInt64, maxBodySize: UInt64 = 512 * 1024 * 1024) {
        self.id = id
        self.epoch = epoch
        self.maxBodySize = maxBodySize
    }

    public var consumerCount: Int { consumers.count }
    public var unconfirmedCount: Int { unconfirmed.count }

    // MARK: requests from the user

    /// Sends `channel.open`.
    public mutating func open(promise: EventLoopPromise<RPCResponse>) -> Action {
        pending.append(PendingRPC(request: .channelOpen, promise: promise, sink: nil))
        return .send(.method(channel: id, .channelOpen))
    }

    /// A synchronous request (or its no-wait form). `sink` goes with `basic.consume`.
    public mutating func request(_ method: AMQPMethod, promise: EventLoopPromise<RPCResponse>, sink: AMQPDeliverySink? = nil) -> Action {
        guard case .open = state else { return .fail(promise, notOpenError) }
        if case .channelClose = method {
            return close(promise: promise)
        }
        if Self.isNoWait(method) {
            if case .basicConsume(let c) = method, let sink { consumers[c.consumerTag] = sink }
            if case .basicCancel(let tag, _) = method, let sink = consumers.removeValue(forKey: tag) {
                return .multiple([.send(.method(channel: id, method)), .finishConsumer(sink, nil),
                                  .succeed(promise, .method(method))])
            }
            return .multiple([.send(.method(channel: id, method)), .succeed(promise, .method(method))])
        }
        pending.append(PendingRPC(request: method, promise: promise, sink: sink))
        return .send(.method(channel: id, method))
    }

    /// `basic.publish` with its content; confirmed later when the channel is in confirm mode.
    public mutating func publish(_ publish: BasicPublish, properties: BasicProperties, body: ByteBuffer,
                                 frameMax: UInt32, promise: EventLoopPromise<Void>) -> Action {
        guard case .open = state else { return .failPublish(promise, notOpenError) }
        let frames = AMQPFrame.content(channel: id, method: .basicPublish(publish), properties: properties,
                                       body: body, frameMax: frameMax)
        if confirmMode {
            unconfirmed.append((nextPublishSeq, promise))
            nextPublishSeq += 1
            return .sendPublish(frames, completeOnWrite: nil)
        }
        return .sendPublish(frames, completeOnWrite: promise)
    }

    /// An asynchronous method (ack, nack, reject, recover-async): sent if the channel is open, else dropped.
    public mutating func send(_ method: AMQPMethod) -> Action {
        guard case .open = state else { return .none }
        return .send(.method(channel: id, method))
    }

    /// Sends `channel.close`; the promise completes on `close-ok`.
    public mutating func close(promise: EventLoopPromise<RPCResponse>) -> Action {
        switch state {
        case .open, .opening:
            state = .closing
            closePromise = promise
            return .send(.method(channel: id, .channelClose(CloseArguments(replyCode: ReplyCode.success, replyText: "bye"))))
        case .closing:
            return .fail(promise, .channelNotOpen(id))
        case .closed:
            return .succeed(promise, .method(.channelCloseOk))
        }
    }

    /// The connection is gone. Consumers are handed back unfinished when `keepConsumers`
    /// (recovery will re-create them); everything awaiting an answer fails.
    public mutating func connectionClosed(_ error: AMQPError, keepConsumers: Bool) -> Action {
        if case .closed = state { return .none }
        return .closed(closeAll(error: error, reply: nil, consumerError: keepConsumers ? nil : error, finishConsumers: !keepConsumers))
    }

    // MARK: frames from the broker

    public mutating func frameReceived(_ frame: AMQPFrame) -> Action {
        if case .closing = state {
            // After sending channel.close only close / close-ok matter.
            if case .method(_, let method) = frame {
                switch method {
                case .channelCloseOk:
                    let promise = closePromise
                    closePromise = nil
                    var closed = closeAll(error: .channelNotOpen(id), reply: nil, consumerError: nil, finishConsumers: true)
                    closed.closePromise = promise
                    return .closed(closed)
                case .channelClose:
                    let promise = closePromise
                    closePromise = nil
                    var closed = closeAll(error: .channelNotOpen(id), reply: .method(channel: id, .channelCloseOk),
                                          consumerError: nil, finishConsumers: true)
                    closed.closePromise = promise
                    return .closed(closed)
                default: break
                }
            }
            return .none
        }
        if case .closed = state { return .none }

        switch frame {
        case .method(_, let method):
            if case .idle = content {} else {
                return .connectionError(.unexpectedFrame("method frame while content was expected on channel \(id)"))
            }
            return methodReceived(method)
        case .header(_, let header):
            guard case .awaitingHeader(let kind) = content else {
                return .connectionError(.unexpectedFrame("content header without a content method on channel \(id)"))
            }
            guard header.bodySize <= maxBodySize else {
                return .connectionError(.frameError("body of \(header.bodySize) bytes exceeds \(maxBodySize)"))
            }
            if header.bodySize == 0 {
                content = .idle
                return complete(kind, header, ByteBuffer())
            }
            content = .awaitingBody(kind, header, nil)
            return .none
        case .body(_, let chunk):
            guard case .awaitingBody(let kind, let header, let soFar) = content else {
                return .connectionError(.unexpectedFrame("content body without a header on channel \(id)"))
            }
            let have = UInt64(soFar?.readableBytes ?? 0)
            guard have + UInt64(chunk.readableBytes) <= header.bodySize else {
                return .connectionError(.frameError("body longer than its declared \(header.bodySize) bytes"))
            }
            var body: ByteBuffer
            if var accumulated = soFar {
                accumulated.writeImmutableBuffer(chunk)
                body = accumulated
            } else if UInt64(chunk.readableBytes) == header.bodySize {
                body = chunk   // the common case: one frame, no copy
            } else {
                body = ByteBuffer()
                body.reserveCapacity(Int(min(header.bodySize, 1 << 20)))
                body.writeImmutableBuffer(chunk)
            }
            if UInt64(body.readableBytes) == header.bodySize {
                content = .idle
                return complete(kind, header, body)
            }
            content = .awaitingBody(kind, header, body)
            return .none
        case .heartbeat:
            return .connectionError(.frameError("heartbeat on channel \(id)"))
        }
    }

    private mutating func methodReceived(_ method: AMQPMethod) -> Action {
        switch method {
        case .basicDeliver(let d):
            content = .awaitingHeader(.deliver(d))
            return .none
        case .basicReturn(let r):
            content = .awaitingHeader(.returned(r))
            return .none
        case .basicGetOk(let g):
            guard let head = pending.first, case .basicGet = head.request else {
                return .connectionError(.commandInvalid("basic.get-ok without a basic.get on channel \(id)"))
            }
            content = .awaitingHeader(.getOk(g))
            return .none
        case .basicAck(let tag, let multiple):
            return .confirm(popConfirmed(tag: tag, multiple: multiple), error: nil)
        case .basicNack(let tag, let multiple, _):
            return .confirm(popConfirmed(tag: tag, multiple: multiple), error: .publishNacked)
        case .basicCancel(let tag, let noWait):
            // Consumer cancel notification: the queue went away or failed over.
            let reply: Action = noWait ? .none : .send(.method(channel: id, .basicCancelOk(consumerTag: tag)))
            guard let sink = consumers.removeValue(forKey: tag) else { return reply }
            return .multiple([reply, .finishConsumer(sink, .consumerCancelled(consumerTag: tag))])
        case .channelFlow(let active):
            return .send(.method(channel: id, .channelFlowOk(active: active)))
        case .channelClose(let args):
            let error = AMQPError.channelClosed(args)
            return .closed(closeAll(error: error, reply: .method(channel: id, .channelCloseOk),
                                    consumerError: error, finishConsumers: true))
        default:
            return replyReceived(method)
        }
    }

    private mutating func replyReceived(_ method: AMQPMethod) -> Action {
        guard let head = pending.first, Self.isReply(method, to: head.request) else {
            return .connectionError(.commandInvalid("unexpected \(method.ids.classID).\(method.ids.methodID) on channel \(id)"))
        }
        pending.removeFirst()
        switch method {
        case .channelOpenOk:
            state = .open
        case .confirmSelectOk:
            confirmMode = true
        case .basicConsumeOk(let tag):
            if let sink = head.sink { consumers[tag] = sink }
        case .basicCancelOk(let tag):
            if let sink = consumers.removeValue(forKey: tag) {
                return .multiple([.finishConsumer(sink, nil), .succeed(head.promise, .method(method))])
            }
        case .basicGetEmpty:
            return .succeed(head.promise, .message(nil))
        default:
            break
        }
        return .succeed(head.promise, .method(method))
    }

    private mutating func complete(_ kind: ContentKind, _ header: ContentHeader, _ body: ByteBuffer) -> Action {
        switch kind {
        case .deliver(let d):
            let message = AMQPMessage(body: body, properties: header.properties, exchange: d.exchange, routingKey: d.routingKey,
                                      redelivered: d.redelivered, deliveryTag: DeliveryTag(epoch: epoch, value: d.deliveryTag),
                                      consumerTag: d.consumerTag)
            guard let sink = consumers[d.consumerTag] else {
                // A delivery for a consumer we no longer have (cancel in flight): give it back.
                return .send(.method(channel: id, .basicReject(deliveryTag: d.deliveryTag, requeue: true)))
            }
            return .deliver(sink, message)
        case .getOk(let g):
            let head = pending.removeFirst()
            let message = AMQPMessage(body: body, properties: header.properties, exchange: g.exchange, routingKey: g.routingKey,
                                      redelivered: g.redelivered, deliveryTag: DeliveryTag(epoch: epoch, value: g.deliveryTag),
                                      consumerTag: nil, messageCount: g.messageCount)
            return .succeed(head.promise, .message(message))
        case .returned(let r):
            return .returned(AMQPReturnedMessage(replyCode: r.replyCode, replyText: r.replyText, exchange: r.exchange,
                                                 routingKey: r.routingKey, properties: header.properties, body: body))
        }
    }

    private mutating func popConfirmed(tag: UInt64, multiple: Bool) -> [EventLoopPromise<Void>] {
        var done: [EventLoopPromise<Void>] = []
        if multiple {
            while let first = unconfirmed.first, tag == 0 || first.seq <= tag {
                done.append(unconfirmed.removeFirst().promise)
            }
        } else if let index = unconfirmed.firstIndex(where: { $0.seq == tag }) {
            done.append(unconfirmed.remove(at: index).promise)
        }
        return done
    }

    private mutating func closeAll(error: AMQPError, reply: AMQPFrame?, consumerError: AMQPError?, finishConsumers: Bool) -> ClosedChannel {
        state = .closed(error)
        let rpcs = pending.map(\.promise) + (closePromise.map { [$0] } ?? [])
        pending.removeAll()
        closePromise = nil
        let publishes = unconfirmed.map(\.promise)
        unconfirmed.removeAll()
        let sinks = finishConsumers ? Array(consumers.values) : []
        consumers.removeAll()
        content = .idle
        return ClosedChannel(error: error, reply: reply, rpcs: rpcs, publishes: publishes, consumers: sinks,
                             consumerError: consumerError, closePromise: nil)
    }

    private var notOpenError: AMQPError {
        if case .closed(let error) = state, case .channelClosed = error { return error }
        return .channelNotOpen(id)
    }

    // MARK: protocol tables

    static func isNoWait(_ method: AMQPMethod) -> Bool {
        switch method {
        case .exchangeDeclare(let m): return m.noWait
        case .exchangeDelete(_, _, let noWait): return noWait
        case .exchangeBind(let m), .exchangeUnbind(let m): return m.noWait
        case .queueDeclare(let m): return m.noWait
        case .queueBind(let m): return m.noWait
        case .queuePurge(_, let noWait): return noWait
        case .queueDelete(_, _, _, let noWait): return noWait
        case .basicConsume(let m): return m.noWait
        case .basicCancel(_, let noWait): return noWait
        case .confirmSelect(let noWait): return noWait
        default: return false
        }
    }

    /// Whether `reply` answers `request`: the reply's method id is the request's plus one,
    /// except exchange.unbind-ok (51) and basic.get's two answers.
    static func isReply(_ reply: AMQPMethod, to request: AMQPMethod) -> Bool {
        let (rc, rm) = reply.ids
        let (qc, qm) = request.ids
        guard rc == qc else { return false }
        switch (qc, qm) {
        case (40, 40): return rm == 51
        case (60, 70): return rm == 71 || rm == 72
        default: return rm == qm + 1
        }
    }
}
