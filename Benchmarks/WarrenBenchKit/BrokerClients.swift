import AMQPClient
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Logging
import NIOCore

/// The bench's AMQP connections log warnings only (a thousand "connected" lines say nothing).
extension String {
    /// Two hex digits for a byte.
    fileprivate func leftPadded() -> String { count < 2 ? "0" + self : self }
}

public let quietLogger: Logger = {
    var logger = Logger(label: "warren-bench.amqp")
    logger.logLevel = .warning
    return logger
}()

/// A plain AMQP consumer — the broker's own ceiling: its own connection, a server-named
/// exclusive queue bound to one pattern, a no-ack consumer whose deliveries are recorded on
/// the clients' loop without a hop.
public final class PlainConsumer: AMQPDeliverySink, @unchecked Sendable {
    let index: Int
    let recorder: Recorder
    public let connection: AMQPConnection
    /// Manual acks: the channel, and every how many deliveries one `multiple` ack goes.
    private var channel: AMQPChannel?
    private let ackEvery: Int
    private var unacked = 0

    init(index: Int, recorder: Recorder, connection: AMQPConnection, ackEvery: Int) {
        self.index = index
        self.recorder = recorder
        self.connection = connection
        self.ackEvery = ackEvery
    }

    /// Returns once the binding and the consumer are in place. With `prefetch`, deliveries are
    /// acknowledged by hand (`amqp-ack`, the like-for-like anchor of Warren's inbox): at most
    /// `prefetch` unacknowledged, one ack with `multiple` every `ackEvery` deliveries.
    public static func open(url: String, exchange: String, pattern: String, index: Int, recorder: Recorder,
                            prefetch: UInt16? = nil, ackEvery: Int = 50) async throws -> PlainConsumer {
        var config = try AMQPConfiguration(url: url)
        config.recovery = RecoveryPolicy(enabled: false)
        config.connectionName = "warren-bench consumer \(index)"
        let connection = try await AMQPConnection.connect(configuration: config, eventLoopGroup: recorder.loop, logger: quietLogger)
        let consumer = PlainConsumer(index: index, recorder: recorder, connection: connection, ackEvery: max(1, ackEvery))
        let channel = try await connection.openChannel()
        if let prefetch { try await channel.basicQos(prefetchCount: prefetch) }
        let queue = try await channel.queueDeclare("", exclusive: true, autoDelete: true).queue
        try await channel.queueBind(queue: queue, exchange: exchange, routingKey: pattern)
        if prefetch != nil { try await recorder.loop.submit { consumer.channel = channel }.get() }
        try await channel.consume(queue: queue, noAck: prefetch == nil, exclusive: true, sink: consumer)
        return consumer
    }

    public func deliver(_ message: AMQPMessage) {
        let now = BenchClock.now()
        let stamp = message.body.withUnsafeReadableBytes { Stamp.parse($0, from: 0) }
        recorder.record(client: index, stamp: stamp, now: now)
        if let channel {
            unacked += 1
            if unacked >= ackEvery {
                unacked = 0
                channel.ack(message.deliveryTag, multiple: true)
            }
        }
    }

    public func finish(_ error: AMQPError?) {
        if let error { recorder.loop.execute { self.recorder.error("consumer \(self.index) ended: \(error)") } }
    }
}

/// The one publisher every target shares: AMQP with publisher confirms, writing to the chat
/// exchange exactly as a plain AMQP client of Warren would. It runs on its own event loop and
/// stamps each body just before writing it.
public final class BenchPublisher: @unchecked Sendable {
    public let connection: AMQPConnection
    let channel: AMQPChannel
    let loop: any EventLoop
    let exchange: String

    init(connection: AMQPConnection, channel: AMQPChannel, loop: any EventLoop, exchange: String) {
        self.connection = connection
        self.channel = channel
        self.loop = loop
        self.exchange = exchange
    }

    public static func open(url: String, exchange: String, loop: any EventLoop) async throws -> BenchPublisher {
        var config = try AMQPConfiguration(url: url)
        config.recovery = RecoveryPolicy(enabled: false)
        config.connectionName = "warren-bench publisher"
        let connection = try await AMQPConnection.connect(configuration: config, eventLoopGroup: loop, logger: quietLogger)
        let channel = try await connection.openChannel()
        try await channel.exchangeDeclare(exchange, type: "topic", durable: true)
        try await channel.confirmSelect()
        return BenchPublisher(connection: connection, channel: channel, loop: loop, exchange: exchange)
    }

    /// What a publishing run did.
    public struct Outcome: Sendable {
        public var started: UInt64
        public var finished: UInt64
        public var confirmed: Int
        public var failed: Int
    }

    /// Publishes `keys.count` messages, message `i` to `keys[i]`. Unpaced, it keeps `window`
    /// publishes awaiting their confirms; paced, it sends `rate` messages per second.
    /// `messageIDs`: each message carries a UUIDv7 `message_id`, as a back end's should, so that
    /// every Warren node and the store know it by the same id (without one, Warren names it
    /// where it reads it).
    public func run(keys: [String], window: Int, rate: Int?, messageIDs: Bool = false) -> EventLoopFuture<Outcome> {
        let promise = loop.makePromise(of: Outcome.self)
        loop.execute { [self] in
            let state = PublishState(keys: keys, promise: promise)
            state.messageIDs = messageIDs
            if let rate, rate > 0 {
                tick(state, start: NIODeadline.now(), interval: .nanoseconds(Int64(1_000_000_000 / rate)))
            } else {
                for _ in 0..<min(window, keys.count) { publishOne(state, refill: true) }
            }
        }
        return promise.futureResult
    }

    /// Paced: one message now, the next at its own deadline.
    private func tick(_ state: PublishState, start: NIODeadline, interval: TimeAmount) {
        guard state.next < state.keys.count else { return }
        publishOne(state)
        loop.scheduleTask(deadline: start + interval * Int64(state.next)) { self.tick(state, start: start, interval: interval) }
    }

    /// One run's progress; touched only on the publisher's loop.
    private final class PublishState: @unchecked Sendable {
        let keys: [String]
        let promise: EventLoopPromise<Outcome>
        var next = 0
        var messageIDs = false
        var outcome: Outcome
        init(keys: [String], promise: EventLoopPromise<Outcome>) {
            self.keys = keys
            self.promise = promise
            outcome = Outcome(started: BenchClock.now(), finished: 0, confirmed: 0, failed: 0)
            if keys.isEmpty { promise.succeed(outcome) }
        }
    }

    private func publishOne(_ state: PublishState, refill: Bool = false) {
        guard state.next < state.keys.count else { return }
        let seq = state.next
        state.next += 1
        var body = ByteBuffer()
        body.reserveCapacity(32)
        Stamp(seq: seq, sentNanos: BenchClock.now()).write(to: &body)
        let confirm: EventLoopPromise<Void>
        do {
            confirm = try channel.startPublish(body, exchange: exchange, routingKey: state.keys[seq],
                                               properties: BasicProperties(deliveryMode: 1, messageID: state.messageIDs ? Self.uuidv7() : nil))
        } catch {
            settle(state, ok: false)
            if refill { publishOne(state, refill: true) }
            return
        }
        confirm.futureResult.whenComplete { [self] result in
            if case .success = result { settle(state, ok: true) } else { settle(state, ok: false) }
            if refill { publishOne(state, refill: true) }
        }
    }

    private func settle(_ state: PublishState, ok: Bool) {
        if ok { state.outcome.confirmed += 1 } else { state.outcome.failed += 1 }
        if state.outcome.confirmed + state.outcome.failed == state.keys.count {
            state.outcome.finished = BenchClock.now()
            state.promise.succeed(state.outcome)
        }
    }

    /// A UUIDv7 (RFC 9562): the wall clock's milliseconds, then random bits, lower-case.
    static func uuidv7() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let ms = UInt64(now.tv_sec) * 1000 + UInt64(now.tv_nsec) / 1_000_000
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<6 { bytes[i] = UInt8(truncatingIfNeeded: ms >> (40 - 8 * UInt64(i))) }
        for i in 6..<16 { bytes[i] = UInt8.random(in: 0...255) }
        bytes[6] = 0x70 | (bytes[6] & 0x0F)
        bytes[8] = 0x80 | (bytes[8] & 0x3F)
        let hex = bytes.map { String($0, radix: 16).leftPadded() }.joined()
        let c = Array(hex)
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-" + String(c[12..<16]) + "-" + String(c[16..<20]) + "-" + String(c[20..<32])
    }

    /// Deletes a queue the bench made a target create (Warren's durable inboxes).
    public func deleteQueue(_ name: String) async throws {
        _ = try await channel.queueDelete(name)
    }

    public func close() async {
        await connection.close()
    }
}
