@testable import AMQPClient
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

/// Records what a consumer was given.
final class RecordingSink: AMQPDeliverySink {
    let box = NIOLockedValueBox<(messages: [AMQPMessage], finished: [AMQPError?])>(([], []))
    func deliver(_ message: AMQPMessage) { box.withLockedValue { $0.messages.append(message) } }
    func finish(_ error: AMQPError?) { box.withLockedValue { $0.finished.append(error) } }
    var messages: [AMQPMessage] { box.withLockedValue { $0.messages } }
    var finished: [AMQPError?] { box.withLockedValue { $0.finished } }
}

@Suite struct ChannelStateMachineTests {
    let loop = EmbeddedEventLoop()

    func opened(_ id: UInt16 = 1, epoch: UInt64 = 1) -> ChannelStateMachine {
        var m = ChannelStateMachine(id: id, epoch: epoch)
        let p = loop.makePromise(of: RPCResponse.self)
        _ = m.open(promise: p)
        perform(m.frameReceived(.method(channel: id, .channelOpenOk)))
        return m
    }

    /// Performs promise completions the way the handler would; returns frames to send.
    @discardableResult
    func perform(_ action: ChannelStateMachine.Action) -> [AMQPFrame] {
        switch action {
        case .none: return []
        case .send(let f): return [f]
        case .sendPublish(let frames, let p): p?.succeed(()); return frames
        case .succeed(let p, let r): p.succeed(r); return []
        case .fail(let p, let e): p.fail(e); return []
        case .failPublish(let p, let e): p.fail(e); return []
        case .deliver(let sink, let m): sink.deliver(m); return []
        case .returned: return []
        case .confirm(let ps, let e): ps.forEach { e == nil ? $0.succeed(()) : $0.fail(e!) }; return []
        case .finishConsumer(let s, let e): s.finish(e); return []
        case .closed(let c):
            c.rpcs.forEach { $0.fail(c.error) }
            c.publishes.forEach { $0.fail(c.error) }
            c.closePromise?.succeed(.method(.channelCloseOk))
            c.consumers.forEach { $0.finish(c.consumerError) }
            return c.reply.map { [$0] } ?? []
        case .connectionError: return []
        case .multiple(let actions): return actions.flatMap { perform($0) }
        }
    }

    func result<T: Sendable>(_ future: EventLoopFuture<T>) -> Result<T, Error>? {
        // The embedded loop runs the callback on this thread, inside `run()`.
        let r = NIOLockedValueBox<Result<T, Error>?>(nil)
        future.whenComplete { value in r.withLockedValue { $0 = value } }
        loop.run()
        return r.withLockedValue { $0 }
    }

    @Test func openThenRequestsArePipelinedAndMatchedInOrder() throws {
        var m = opened()
        let p1 = loop.makePromise(of: RPCResponse.self)
        let p2 = loop.makePromise(of: RPCResponse.self)
        let f1 = perform(m.request(.queueDeclare(QueueDeclare(queue: "a")), promise: p1))
        let f2 = perform(m.request(.queueBind(QueueBind(queue: "a", exchange: "x", routingKey: "k")), promise: p2))
        #expect(f1.count == 1 && f2.count == 1, "the second request is sent without waiting for the first reply")
        perform(m.frameReceived(.method(channel: 1, .queueDeclareOk(QueueDeclareOk(queue: "a", messageCount: 0, consumerCount: 0)))))
        #expect(result(p2.futureResult) == nil)
        guard case .success(.method(.queueDeclareOk)) = result(p1.futureResult) else { Issue.record("p1"); return }
        perform(m.frameReceived(.method(channel: 1, .queueBindOk)))
        guard case .success(.method(.queueBindOk)) = result(p2.futureResult) else { Issue.record("p2"); return }
    }

    @Test func replyThatMatchesNoRequestIsConnectionError() {
        var m = opened()
        guard case .connectionError(let e) = m.frameReceived(.method(channel: 1, .queueBindOk)) else { Issue.record("expected error"); return }
        #expect(e.replyCode == 503)
    }

    @Test func requestsOnUnopenedChannelFail() {
        var m = ChannelStateMachine(id: 1, epoch: 1)
        let p = loop.makePromise(of: RPCResponse.self)
        perform(m.request(.basicQos(prefetchSize: 0, prefetchCount: 1, global: false), promise: p))
        guard case .failure(let e) = result(p.futureResult) else { Issue.record("should fail"); return }
        #expect(e as? AMQPError == .channelNotOpen(1))
    }

    @Test func publisherConfirmsSingleMultipleAndNack() {
        var m = opened()
        let select = loop.makePromise(of: RPCResponse.self)
        perform(m.request(.confirmSelect(noWait: false), promise: select))
        perform(m.frameReceived(.method(channel: 1, .confirmSelectOk)))
        #expect(m.confirmMode)
        let publishes = (0..<5).map { _ in loop.makePromise(of: Void.self) }
        for p in publishes {
            let frames = perform(m.publish(BasicPublish(exchange: "x", routingKey: "k"), properties: BasicProperties(),
                                           body: ByteBuffer(string: "hi"), frameMax: 4096, promise: p))
            #expect(frames.count == 3)
        }
        #expect(result(publishes[0].futureResult) == nil, "not done until the broker acks")
        perform(m.frameReceived(.method(channel: 1, .basicAck(deliveryTag: 2, multiple: true))))
        #expect(result(publishes[0].futureResult) != nil && result(publishes[1].futureResult) != nil)
        #expect(result(publishes[2].futureResult) == nil)
        perform(m.frameReceived(.method(channel: 1, .basicAck(deliveryTag: 4, multiple: false))))
        guard case .success = result(publishes[3].futureResult) else { Issue.record("4 acked"); return }
        perform(m.frameReceived(.method(channel: 1, .basicNack(deliveryTag: 3, multiple: false, requeue: false))))
        guard case .failure(let e) = result(publishes[2].futureResult) else { Issue.record("3 nacked"); return }
        #expect(e as? AMQPError == .publishNacked)
        #expect(m.unconfirmedCount == 1)
        // The connection drops before 5 is confirmed: it fails, never succeeds.
        perform(m.connectionClosed(.connectionLost("gone"), keepConsumers: true))
        guard case .failure(let lost) = result(publishes[4].futureResult) else { Issue.record("5 must fail"); return }
        #expect(lost as? AMQPError == .connectionLost("gone"))
    }

    @Test func deliveryAssembledAcrossBodyFrames() {
        var m = opened(epoch: 7)
        let sink = RecordingSink()
        let p = loop.makePromise(of: RPCResponse.self)
        perform(m.request(.basicConsume(BasicConsume(queue: "q", consumerTag: "c1")), promise: p, sink: sink))
        perform(m.frameReceived(.method(channel: 1, .basicConsumeOk(consumerTag: "c1"))))
        let body = ByteBuffer(bytes: (0..<10_000).map { UInt8($0 % 200) })
        let frames = AMQPFrame.content(channel: 1, method: .basicDeliver(BasicDeliver(consumerTag: "c1", deliveryTag: 42, redelivered: true,
                                                                                        exchange: "chat", routingKey: "a.b")),
                                       properties: BasicProperties(messageID: "m"), body: body, frameMax: 4096)
        for f in frames { perform(m.frameReceived(f)) }
        #expect(sink.messages.count == 1)
        let msg = sink.messages[0]
        #expect(msg.body == body)
        #expect(msg.deliveryTag == DeliveryTag(epoch: 7, value: 42))
        #expect(msg.redelivered && msg.routingKey == "a.b" && msg.properties.messageID == "m")
    }

    @Test func contentOutOfOrderIsUnexpectedFrame() {
        var m = opened()
        guard case .connectionError(let e) = m.frameReceived(.body(channel: 1, ByteBuffer(string: "x"))) else { Issue.record(); return }
        #expect(e.replyCode == 505)
        var m2 = opened()
        perform(m2.frameReceived(.method(channel: 1, .basicDeliver(BasicDeliver(consumerTag: "c", deliveryTag: 1, redelivered: false,
                                                                                 exchange: "", routingKey: "q")))))
        guard case .connectionError = m2.frameReceived(.method(channel: 1, .basicQosOk)) else { Issue.record(); return }
    }

    @Test func bodyLongerThanDeclaredIsError() {
        var m = opened()
        perform(m.frameReceived(.method(channel: 1, .basicDeliver(BasicDeliver(consumerTag: "c", deliveryTag: 1, redelivered: false,
                                                                                exchange: "", routingKey: "q")))))
        perform(m.frameReceived(.header(channel: 1, ContentHeader(bodySize: 2, properties: BasicProperties()))))
        guard case .connectionError = m.frameReceived(.body(channel: 1, ByteBuffer(string: "xyz"))) else { Issue.record(); return }
    }

    @Test func deliveryForUnknownConsumerIsRequeued() {
        var m = opened()
        perform(m.frameReceived(.method(channel: 1, .basicDeliver(BasicDeliver(consumerTag: "gone", deliveryTag: 9, redelivered: false,
                                                                                exchange: "", routingKey: "q")))))
        let frames = perform(m.frameReceived(.header(channel: 1, ContentHeader(bodySize: 0, properties: BasicProperties()))))
        #expect(frames == [.method(channel: 1, .basicReject(deliveryTag: 9, requeue: true))])
    }

    @Test func brokerCancelEndsConsumerWithReason() {
        var m = opened()
        let sink = RecordingSink()
        perform(m.request(.basicConsume(BasicConsume(queue: "q", consumerTag: "c1")), promise: loop.makePromise(), sink: sink))
        perform(m.frameReceived(.method(channel: 1, .basicConsumeOk(consumerTag: "c1"))))
        perform(m.frameReceived(.method(channel: 1, .basicCancel(consumerTag: "c1", noWait: true))))
        #expect(sink.finished.count == 1)
        #expect(sink.finished.first == .consumerCancelled(consumerTag: "c1"))
        #expect(m.consumerCount == 0)
    }

    @Test func userCancelEndsConsumerNormally() {
        var m = opened()
        let sink = RecordingSink()
        perform(m.request(.basicConsume(BasicConsume(queue: "q", consumerTag: "c1")), promise: loop.makePromise(), sink: sink))
        perform(m.frameReceived(.method(channel: 1, .basicConsumeOk(consumerTag: "c1"))))
        let p = loop.makePromise(of: RPCResponse.self)
        perform(m.request(.basicCancel(consumerTag: "c1", noWait: false), promise: p))
        perform(m.frameReceived(.method(channel: 1, .basicCancelOk(consumerTag: "c1"))))
        #expect(sink.finished.count == 1 && sink.finished[0] == nil)
        #expect(result(p.futureResult) != nil)
    }

    @Test func serverChannelCloseFailsPendingAndAnswersCloseOk() {
        var m = opened()
        let sink = RecordingSink()
        perform(m.request(.basicConsume(BasicConsume(queue: "q", consumerTag: "c1")), promise: loop.makePromise(), sink: sink))
        perform(m.frameReceived(.method(channel: 1, .basicConsumeOk(consumerTag: "c1"))))
        let p = loop.makePromise(of: RPCResponse.self)
        perform(m.request(.queueDeclare(QueueDeclare(queue: "missing", passive: true)), promise: p))
        let args = CloseArguments(replyCode: 404, replyText: "NOT_FOUND - no queue 'missing'", classID: 50, methodID: 10)
        let frames = perform(m.frameReceived(.method(channel: 1, .channelClose(args))))
        #expect(frames == [.method(channel: 1, .channelCloseOk)])
        guard case .failure(let e) = result(p.futureResult) else { Issue.record(); return }
        #expect(e as? AMQPError == .channelClosed(args))
        #expect(sink.finished.first == .channelClosed(args))
        // Later requests fail with the same reason.
        let later = loop.makePromise(of: RPCResponse.self)
        perform(m.request(.basicQos(prefetchSize: 0, prefetchCount: 1, global: false), promise: later))
        guard case .failure(let e2) = result(later.futureResult) else { Issue.record(); return }
        #expect(e2 as? AMQPError == .channelClosed(args))
    }

    @Test func userCloseDiscardsFramesUntilCloseOk() {
        var m = opened()
        let p = loop.makePromise(of: RPCResponse.self)
        let frames = perform(m.close(promise: p))
        #expect(frames.count == 1)
        #expect(perform(m.frameReceived(.method(channel: 1, .basicDeliver(BasicDeliver(consumerTag: "c", deliveryTag: 1, redelivered: false,
                                                                                       exchange: "", routingKey: "")))))  == [])
        perform(m.frameReceived(.method(channel: 1, .channelCloseOk)))
        guard case .success = result(p.futureResult) else { Issue.record(); return }
    }

    @Test func connectionLossKeepsConsumersForRecovery() {
        var m = opened()
        let sink = RecordingSink()
        perform(m.request(.basicConsume(BasicConsume(queue: "q", consumerTag: "c1")), promise: loop.makePromise(), sink: sink))
        perform(m.frameReceived(.method(channel: 1, .basicConsumeOk(consumerTag: "c1"))))
        perform(m.connectionClosed(.connectionLost("x"), keepConsumers: true))
        #expect(sink.finished.isEmpty)
    }

    @Test func flowIsAnswered() {
        var m = opened()
        #expect(perform(m.frameReceived(.method(channel: 1, .channelFlow(active: false)))) == [.method(channel: 1, .channelFlowOk(active: false))])
    }

    @Test func getOkAndGetEmpty() {
        var m = opened()
        let p1 = loop.makePromise(of: RPCResponse.self)
        let p2 = loop.makePromise(of: RPCResponse.self)
        perform(m.request(.basicGet(queue: "q", noAck: false), promise: p1))
        perform(m.request(.basicGet(queue: "q", noAck: false), promise: p2))
        perform(m.frameReceived(.method(channel: 1, .basicGetOk(BasicGetOk(deliveryTag: 3, redelivered: false, exchange: "",
                                                                            routingKey: "q", messageCount: 0)))))
        perform(m.frameReceived(.header(channel: 1, ContentHeader(bodySize: 1, properties: BasicProperties()))))
        perform(m.frameReceived(.body(channel: 1, ByteBuffer(string: "z"))))
        perform(m.frameReceived(.method(channel: 1, .basicGetEmpty)))
        guard case .success(.message(let msg?)) = result(p1.futureResult) else { Issue.record(); return }
        #expect(String(buffer: msg.body) == "z")
        guard case .success(.message(nil)) = result(p2.futureResult) else { Issue.record(); return }
    }

    @Test(arguments: [
        (AMQPMethod.exchangeUnbindOk, AMQPMethod.exchangeUnbind(ExchangeBind(destination: "a", source: "b", routingKey: "c")), true),
        (.basicGetEmpty, .basicGet(queue: "q", noAck: false), true),
        (.queueBindOk, .queueDeclare(QueueDeclare(queue: "q")), false),
        (.channelCloseOk, .channelClose(CloseArguments(replyCode: 200, replyText: "")), true),
    ])
    func replyMatching(reply: AMQPMethod, request: AMQPMethod, matches: Bool) {
        #expect(ChannelStateMachine.isReply(reply, to: request) == matches)
    }
}
