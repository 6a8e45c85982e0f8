import AMQPClient
import Foundation
import NIOCore
import Testing
import TestSupport

/// Recovery against ``ScriptedBroker``: a consumer the broker is slow to accept after a
/// reconnect (a quorum queue electing a leader) must not hold up the rest of the connection.
@Suite("Consumer restore", .serialized)
struct ConsumerRestoreTests {
    @Test func theConnectionIsUpAndPublishesWhileAConsumerWaitsToBeRestored() async throws {
        let broker = try await ScriptedBroker.start()
        let connection = try await Self.connect(to: broker)
        let events = connection.events()

        let publishing = try await connection.openChannel()
        try await publishing.confirmSelect()
        let slowChannel = try await connection.openChannel()
        try await slowChannel.queueDeclare("slow", durable: true)
        let slow = try await slowChannel.consume(queue: "slow")
        let fastChannel = try await connection.openChannel()
        try await fastChannel.queueDeclare("fast", durable: true)
        let fast = try await fastChannel.consume(queue: "fast")

        broker.hold(queue: "slow")
        broker.dropConnections()
        // Up again although the slow consumer's basic.consume is unanswered (it used to wait for it).
        try await Self.until(events) { if case .connected(let epoch) = $0 { return epoch >= 2 } else { return false } }
        #expect(connection.state == .connected)
        try await publishing.publish("while the slow consumer waits", exchange: "", routingKey: "fast")

        // Both consumes are sent on the new connection (each channel's consumers are restored on
        // their own, in no set order); the slow one stays unanswered.
        try await Self.until {
            broker.received.contains { $0.connection == 2 && Self.consumes($0.method, "fast") }
                && broker.received.contains { $0.connection == 2 && Self.consumes($0.method, "slow") }
        }
        // A restored consumer's delivery is acked on the new link (an ack while the link was
        // not yet installed used to be dropped, leaving the message unacked on the broker).
        broker.deliver("to fast", consumerTag: fast.tag, channel: fastChannel.id, deliveryTag: 1)
        let delivery = try #require(try await Self.firstMessage(of: fast))
        #expect(String(buffer: delivery.body) == "to fast")
        fastChannel.ack(delivery.deliveryTag)
        try await Self.until { broker.received.contains { $0.connection == 2 && Self.acks($0.method, 1) } }

        // Once the broker answers, the slow consumer receives too.
        broker.release()
        broker.deliver("to slow", consumerTag: slow.tag, channel: slowChannel.id, deliveryTag: 1)
        #expect(try await Self.first(of: slow) == "to slow")
        await connection.close()
        await broker.stop()
    }

    /// Its user cancels a consumer whose restore the broker has not answered yet: the cancel
    /// completes once the broker answers, the consumer's sequence ends, and the consumer is
    /// not left running on the broker (a cancel follows the consume there).
    @Test func aConsumerCancelledWhileItWaitsToBeRestoredEnds() async throws {
        let broker = try await ScriptedBroker.start()
        let connection = try await Self.connect(to: broker)
        let events = connection.events()
        let channel = try await connection.openChannel()
        let consumer = try await channel.consume(queue: "slow")
        let ended = Task { try await Self.first(of: consumer) }

        broker.hold(queue: "slow")
        broker.dropConnections()
        try await Self.until(events) { if case .connected(let epoch) = $0 { return epoch >= 2 } else { return false } }
        try await Self.until { broker.received.contains { $0.connection == 2 && Self.consumes($0.method, "slow") } }
        let cancel = Task { try await channel.cancel(consumerTag: consumer.tag) }
        try await Self.until { broker.received.contains { $0.connection == 2 && Self.cancels($0.method, consumer.tag) } }
        broker.release()
        try await cancel.value
        #expect(try await ended.value == nil)
        let onNewLink = broker.received.filter { $0.connection == 2 }.map(\.method)
        let consumeAt = try #require(onNewLink.firstIndex { Self.consumes($0, "slow") })
        #expect(onNewLink[consumeAt...].contains { Self.cancels($0, consumer.tag) })
        await connection.close()
        await broker.stop()
    }

    /// A connection to `broker` that recovers within milliseconds.
    static func connect(to broker: ScriptedBroker) async throws -> AMQPConnection {
        var configuration = AMQPConfiguration()
        configuration.port = broker.port
        configuration.heartbeat = 0
        configuration.recovery = RecoveryPolicy(initialDelay: .milliseconds(10), maxDelay: .milliseconds(50))
        return try await AMQPConnection.connect(configuration: configuration)
    }

    static func cancels(_ method: AMQPMethod, _ tag: String) -> Bool {
        if case .basicCancel(let t, _) = method { return t == tag }
        return false
    }

    static func consumes(_ method: AMQPMethod, _ queue: String) -> Bool {
        if case .basicConsume(let c) = method { return c.queue == queue }
        return false
    }

    static func first(of consumer: AMQPConsumer) async throws -> String? {
        try await firstMessage(of: consumer).map { String(buffer: $0.body) }
    }

    static func firstMessage(of consumer: AMQPConsumer) async throws -> AMQPMessage? {
        for try await message in consumer { return message }
        return nil
    }

    static func acks(_ method: AMQPMethod, _ tag: UInt64) -> Bool {
        if case .basicAck(let t, _) = method { return t == tag }
        return false
    }

    /// Waits for a connection event (a 30 s guard turns "never" into a failure instead of a hang).
    static func until(_ events: AsyncStream<AMQPConnectionEvent>,
                      _ predicate: @escaping @Sendable (AMQPConnectionEvent) -> Bool) async throws {
        try await firstMatch(in: events, where: predicate)
    }

    /// Waits for a condition on the broker's record (checked every 10 ms, for at most 30 s).
    static func until(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw TimedOut() }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
