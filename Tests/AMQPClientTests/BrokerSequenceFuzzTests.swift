@testable import AMQPClient
import NIOCore
import NIOEmbedded
import Testing
import TestSupport

/// Whatever a broker sends, in whatever order, the state machines answer with actions or a
/// typed error, never a trap: the frame decoder's fuzzing (``FrameFuzzTests``, the `amqp` fuzz
/// target) stops at well-formed frames, and these take well-formed frames in orders and with
/// values a broker should never send — replies with nothing pending, content without a method,
/// acks of tags never published, bodies longer than their header said — while the client keeps
/// making requests.
@Suite struct BrokerSequenceFuzzTests {
    /// What a broker might send on `channel` next: a whole delivery now and then, else one frame
    /// that may or may not make sense where it lands.
    static func frames(channel: UInt16, using rng: inout SplitMix) -> [AMQPFrame] {
        if Int.random(in: 0..<4, using: &rng) == 0 {
            let method: AMQPMethod = Bool.random(using: &rng)
                ? .basicDeliver(BasicDeliver(consumerTag: "c1", deliveryTag: UInt64.random(in: 1...9, using: &rng), redelivered: false,
                                             exchange: "chat", routingKey: "a.b"))
                : .basicGetOk(BasicGetOk(deliveryTag: 1, redelivered: false, exchange: "", routingKey: "q", messageCount: 0))
            return AMQPFrame.content(channel: channel, method: method, properties: BasicProperties(),
                                     body: ByteBuffer(string: String(repeating: "b", count: Int.random(in: 0...9, using: &rng))),
                                     frameMax: 4096)
        }
        return [frame(channel: channel, using: &rng)]
    }

    /// A frame a broker might send on `channel`, or nonsense shaped like one.
    static func frame(channel: UInt16, using rng: inout SplitMix) -> AMQPFrame {
        let tag = [0, 1, 2, 3, UInt64.random(in: 0...100, using: &rng), UInt64.max][Int.random(in: 0..<6, using: &rng)]
        let consumer = ["c1", "c2", "", "zz"][Int.random(in: 0..<4, using: &rng)]
        switch Int.random(in: 0..<12, using: &rng) {
        case 0: return .header(channel: channel, ContentHeader(bodySize: [0, 1, 5, 40, UInt64.max][Int.random(in: 0..<5, using: &rng)],
                                                                properties: BasicProperties(appID: "x")))
        case 1: return .body(channel: channel, ByteBuffer(bytes: (0..<Int.random(in: 0..<12, using: &rng)).map { UInt8($0) }))
        case 2: return .heartbeat
        case 3: return .method(channel: channel, .basicAck(deliveryTag: tag, multiple: Bool.random(using: &rng)))
        case 4: return .method(channel: channel, .basicNack(deliveryTag: tag, multiple: Bool.random(using: &rng), requeue: false))
        case 5: return .method(channel: channel, .basicDeliver(BasicDeliver(consumerTag: consumer, deliveryTag: tag, redelivered: false,
                                                                               exchange: "chat", routingKey: "a.b")))
        case 6: return .method(channel: channel, .basicCancel(consumerTag: consumer, noWait: Bool.random(using: &rng)))
        case 7: return .method(channel: channel, .basicConsumeOk(consumerTag: consumer))
        case 8: return .method(channel: channel, .basicCancelOk(consumerTag: consumer))
        default: return .method(channel: channel, sampleMethods.randomElement(using: &rng)!)
        }
    }

    @Test func aChannelTakesAnySequenceOfBrokerFrames() {
        let helper = ChannelStateMachineTests()
        let loop = helper.loop
        var rng = SplitMix(seed: 0xB40C)
        var outcomes = (errors: 0, deliveries: 0, closed: 0)
        for _ in 0..<3_000 {
            var m = ChannelStateMachine(id: 1, epoch: 1, maxBodySize: 64)
            helper.perform(m.open(promise: loop.makePromise()))
            if Bool.random(using: &rng) { helper.perform(m.frameReceived(.method(channel: 1, .channelOpenOk))) }
            let sink = RecordingSink()
            for _ in 0..<Int.random(in: 1...40, using: &rng) {
                // The client goes on making requests between the broker's frames.
                switch Int.random(in: 0..<10, using: &rng) {
                case 0: helper.perform(m.request(.confirmSelect(noWait: false), promise: loop.makePromise()))
                case 1: helper.perform(m.request(.basicConsume(BasicConsume(queue: "q", consumerTag: "c1")), promise: loop.makePromise(),
                                                 sink: sink))
                case 2: helper.perform(m.request(.basicGet(queue: "q", noAck: false), promise: loop.makePromise()))
                case 3: helper.perform(m.publish(BasicPublish(exchange: "chat", routingKey: "a.b"), properties: BasicProperties(),
                                                 body: ByteBuffer(string: "x"), frameMax: 4096, promise: loop.makePromise()))
                case 4 where Int.random(in: 0..<8, using: &rng) == 0: helper.perform(m.close(promise: loop.makePromise()))
                default: break
                }
                for frame in Self.frames(channel: 1, using: &rng) {
                    let action = m.frameReceived(frame)
                    if case .connectionError = action { outcomes.errors += 1 }
                    if case .closed = action { outcomes.closed += 1 }
                    helper.perform(action)
                }
            }
            outcomes.deliveries += sink.messages.count
            // Whatever state it ended in, the connection going settles every promise it holds.
            helper.perform(m.connectionClosed(.connectionLost("gone"), keepConsumers: false))
        }
        loop.run()
        // Every kind of outcome occurred, so the sequences reached past the first frame.
        #expect(outcomes.errors > 100 && outcomes.deliveries > 0 && outcomes.closed > 0, "\(outcomes)")
    }

    @Test func aConnectionTakesAnySequenceOfBrokerFrames() {
        var rng = SplitMix(seed: 0xC0DE)
        var closed = 0
        for _ in 0..<3_000 {
            var m = ConnectionStateMachine(configuration: ConnectionStateMachineTests.config, now: ConnectionStateMachineTests.t0)
            _ = m.connected()
            for step in 0..<Int.random(in: 1...30, using: &rng) {
                // Mostly a well-behaved handshake first, then anything.
                let frame: AMQPFrame = switch (step, Int.random(in: 0..<4, using: &rng)) {
                case (0, 0...2): .method(channel: 0, .connectionStart(ConnectionStart()))
                case (1, 0...2): .method(channel: 0, .connectionTune(ConnectionTune(channelMax: UInt16.random(in: 0...3, using: &rng),
                                                                                   frameMax: [0, 1, 4096, UInt32.max][Int.random(in: 0..<4, using: &rng)],
                                                                                   heartbeat: [0, 1, UInt16.max][Int.random(in: 0..<3, using: &rng)])))
                case (2, 0...2): .method(channel: 0, .connectionOpenOk)
                default: Self.frame(channel: Int.random(in: 0..<4, using: &rng) == 0 ? 1 : 0, using: &rng)
                }
                if case .closeSocket = m.frameReceived(frame) { closed += 1 }
                _ = m.heartbeatTick(now: ConnectionStateMachineTests.t0 + .seconds(Int64(step)))
                if Int.random(in: 0..<10, using: &rng) == 0 {
                    _ = m.outboundPublish([.method(channel: 1, .basicPublish(BasicPublish(exchange: "", routingKey: "q")))])
                }
            }
            _ = m.socketClosed()
        }
        #expect(closed > 100)
    }
}
