import AMQPClient
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// A minimal AMQP 0-9-1 peer on loopback, for the client's recovery logic where a real
/// RabbitMQ cannot be made to misbehave on cue. It speaks the handshake, answers channel
/// opens, QoS, confirm mode, declarations and binds at once, confirms every publish, and
/// answers `basic.consume` at once too, unless the consumed queue is held
/// (``hold(queue:)``): then that channel's methods wait, in order, until ``release()``, as a
/// broker whose quorum queue is electing a leader makes them wait.
final class ScriptedBroker: Sendable {
    /// What the broker received: the connection's number (from 1), the channel and the method.
    struct Received: Sendable {
        var connection: Int
        var channel: UInt16
        var method: AMQPMethod
    }

    private struct State {
        var connections: [Int: any Channel] = [:]
        var count = 0
        var received: [Received] = []
        var heldQueues: Set<String> = []
        /// Channels whose methods wait: (connection, channel) → the frames not yet answered.
        var held: [HeldKey: [AMQPMethod]] = [:]
    }

    struct HeldKey: Hashable {
        var connection: Int
        var channel: UInt16
    }

    private let state = NIOLockedValueBox(State())
    private let server: any Channel
    let port: Int

    private init(server: any Channel) {
        self.server = server
        self.port = server.localAddress?.port ?? 0
    }

    static func start() async throws -> ScriptedBroker {
        let box = NIOLockedValueBox<ScriptedBroker?>(nil)
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard let broker = box.withLockedValue({ $0 }) else { throw ChannelError.ioOnClosedChannel }
                    let number = broker.accepted(channel)
                    try channel.pipeline.syncOperations.addHandler(ScriptedBrokerHandler(broker: broker, connection: number))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let broker = ScriptedBroker(server: server)
        box.withLockedValue { $0 = broker }
        return broker
    }

    func stop() async {
        let open = state.withLockedValue { Array($0.connections.values) }
        for c in open { try? await c.close() }
        try? await server.close()
    }

    /// Consumes of `queue` (and whatever follows them on their channel) wait for ``release()``.
    func hold(queue: String) {
        state.withLockedValue { _ = $0.heldQueues.insert(queue) }
    }

    /// Answers everything held, in order, and holds nothing more.
    func release() {
        let held = state.withLockedValue { s -> [(HeldKey, [AMQPMethod])] in
            s.heldQueues.removeAll()
            defer { s.held.removeAll() }
            return Array(s.held)
        }
        for (key, methods) in held {
            guard let channel = state.withLockedValue({ $0.connections[key.connection] }) else { continue }
            channel.eventLoop.execute {
                for method in methods { Self.answer(method, channel: key.channel, on: channel) }
            }
        }
    }

    /// Closes every client connection, as a broker node that dies does.
    func dropConnections() {
        let open = state.withLockedValue { s -> [any Channel] in
            defer { s.connections.removeAll() }
            return Array(s.connections.values)
        }
        for c in open { c.close(promise: nil) }
    }

    /// Sends a message to consumer `tag` on `channel` of the newest connection.
    func deliver(_ body: String, consumerTag tag: String, channel: UInt16, deliveryTag: UInt64) {
        guard let connection = state.withLockedValue({ s in s.connections.max { $0.key < $1.key }?.value }) else { return }
        connection.eventLoop.execute {
            let deliver = AMQPMethod.basicDeliver(BasicDeliver(consumerTag: tag, deliveryTag: deliveryTag, redelivered: false,
                                                               exchange: "", routingKey: "q"))
            let frames = AMQPFrame.content(channel: channel, method: deliver, properties: BasicProperties(),
                                           body: ByteBuffer(string: body), frameMax: 131_072)
            for frame in frames { Self.write(frame, on: connection) }
            connection.flush()
        }
    }

    var received: [Received] { state.withLockedValue { $0.received } }

    // MARK: the handler's side

    fileprivate func accepted(_ channel: any Channel) -> Int {
        state.withLockedValue { s in
            s.count += 1
            s.connections[s.count] = channel
            return s.count
        }
    }

    /// Records `method` and answers it, unless its channel is held.
    fileprivate func received(_ method: AMQPMethod, channel id: UInt16, connection: Int, on channel: any Channel) {
        let answerNow = state.withLockedValue { s -> Bool in
            s.received.append(Received(connection: connection, channel: id, method: method))
            let key = HeldKey(connection: connection, channel: id)
            if s.held[key] != nil {
                s.held[key]!.append(method)
                return false
            }
            if case .basicConsume(let consume) = method, s.heldQueues.contains(consume.queue) {
                s.held[key] = [method]
                return false
            }
            return true
        }
        if answerNow { Self.answer(method, channel: id, on: channel) }
    }

    fileprivate static func answer(_ method: AMQPMethod, channel id: UInt16, on channel: any Channel) {
        let reply: AMQPMethod?
        switch method {
        case .connectionStartOk: reply = .connectionTune(ConnectionTune(channelMax: 2047, frameMax: 131_072, heartbeat: 0))
        case .connectionOpen: reply = .connectionOpenOk
        case .connectionClose: reply = .connectionCloseOk
        case .channelOpen: reply = .channelOpenOk
        case .channelClose: reply = .channelCloseOk
        case .basicQos: reply = .basicQosOk
        case .confirmSelect(let noWait): reply = noWait ? nil : .confirmSelectOk
        case .exchangeDeclare: reply = .exchangeDeclareOk
        case .queueDeclare(let d): reply = .queueDeclareOk(QueueDeclareOk(queue: d.queue, messageCount: 0, consumerCount: 0))
        case .queueBind: reply = .queueBindOk
        case .basicConsume(let c): reply = .basicConsumeOk(consumerTag: c.consumerTag)
        case .basicCancel(let tag, let noWait): reply = noWait ? nil : .basicCancelOk(consumerTag: tag)
        default: reply = nil
        }
        if let reply {
            write(.method(channel: id, reply), on: channel)
            channel.flush()
        }
    }

    fileprivate static func write(_ frame: AMQPFrame, on channel: any Channel) {
        var buffer = channel.allocator.buffer(capacity: 256)
        try? frame.encode(into: &buffer)
        channel.write(buffer, promise: nil)
    }
}

/// Reads the client's protocol header and frames for ``ScriptedBroker``.
private final class ScriptedBrokerHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    let broker: ScriptedBroker
    let connection: Int
    var buffer = ByteBuffer()
    var sawHeader = false
    /// Publishes per channel in confirm mode, to confirm them in order.
    var published: [UInt16: UInt64] = [:]

    init(broker: ScriptedBroker, connection: Int) {
        self.broker = broker
        self.connection = connection
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        buffer.writeBuffer(&bytes)
        if !sawHeader {
            guard buffer.readableBytes >= AMQPFrame.protocolHeader.count else { return }
            buffer.moveReaderIndex(forwardBy: AMQPFrame.protocolHeader.count)
            sawHeader = true
            let start = AMQPMethod.connectionStart(ConnectionStart(serverProperties: [
                "capabilities": .table(["publisher_confirms": .bool(true), "consumer_cancel_notify": .bool(true),
                                        "basic.nack": .bool(true), "per_consumer_qos": .bool(true)]),
            ]))
            ScriptedBroker.write(.method(channel: 0, start), on: context.channel)
            context.flush()
        }
        while let frame = try? AMQPFrame.decode(from: &buffer, maxFrameSize: 131_072) {
            switch frame {
            case .method(let id, let method):
                if case .basicPublish = method {
                    published[id, default: 0] += 1
                    continue
                }
                broker.received(method, channel: id, connection: connection, on: context.channel)
            case .body(let id, _):
                // One body frame per small test message: confirm it.
                if let seq = published[id] {
                    ScriptedBroker.write(.method(channel: id, .basicAck(deliveryTag: seq, multiple: false)), on: context.channel)
                    context.flush()
                }
            case .header, .heartbeat:
                break
            }
        }
    }
}
