import AMQPClient
import NIOConcurrencyHelpers
import NIOCore
import Testing

@Suite("Broker behaviour", .serialized)
struct BrokerBehaviourTests {
    @Test func tenThousandConfirmedPublishesConsumedExactlyOnce() async throws {
        let connection = try await Broker.connect()
        defer { Task { await connection.close() } }
        let publisher = try await connection.openChannel()
        let consumerChannel = try await connection.openChannel()
        let queue = Broker.unique("bulk")
        try await publisher.queueDeclare(queue, exclusive: true)
        try await publisher.confirmSelect()
        try await consumerChannel.basicQos(prefetchCount: 200)
        let consumer = try await consumerChannel.consume(queue: queue)
        let total = 10_000

        // Publish in concurrent windows so confirms are pipelined, not one round trip each.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for i in stride(from: worker, to: total, by: 8) {
                        try await publisher.publish("\(i)", exchange: "", routingKey: queue)
                    }
                }
            }
            try await group.waitForAll()
        }

        let seen = try await within(.seconds(60)) {
            var seen = [Int: Int]()
            for try await message in consumer {
                let n = Int(String(buffer: message.body))!
                seen[n, default: 0] += 1
                consumerChannel.ack(message.deliveryTag)
                if seen.count == total { break }
            }
            return seen
        }
        #expect(seen.count == total)
        #expect(seen.values.allSatisfy { $0 == 1 }, "each message exactly once")
        #expect(try await publisher.get(queue: queue) == nil, "nothing left over")
    }

    @Test func nackAndRejectRequeue() async throws {
        let connection = try await Broker.connect()
        defer { Task { await connection.close() } }
        let channel = try await connection.openChannel()
        let queue = Broker.unique("requeue")
        try await channel.queueDeclare(queue, exclusive: true)
        try await channel.confirmSelect()
        try await channel.publish("a", exchange: "", routingKey: queue)
        try await channel.publish("b", exchange: "", routingKey: queue)

        let a1 = try #require(try await channel.get(queue: queue))
        let b1 = try #require(try await channel.get(queue: queue))
        #expect(!a1.redelivered && !b1.redelivered)
        #expect(String(buffer: a1.body) == "a")
        channel.nack(a1.deliveryTag, requeue: true)
        channel.reject(b1.deliveryTag, requeue: true)

        var again: [String: Bool] = [:]
        for _ in 0..<2 {
            let m = try #require(try await channel.get(queue: queue))
            again[String(buffer: m.body)] = m.redelivered
            channel.ack(m.deliveryTag)
        }
        #expect(again == ["a": true, "b": true])

        // nack multiple and reject without requeue
        try await channel.publish("c", exchange: "", routingKey: queue)
        try await channel.publish("d", exchange: "", routingKey: queue)
        _ = try #require(try await channel.get(queue: queue))
        let d = try #require(try await channel.get(queue: queue))
        channel.nack(d.deliveryTag, multiple: true, requeue: true)
        let c2 = try #require(try await channel.get(queue: queue))
        let d2 = try #require(try await channel.get(queue: queue))
        #expect([String(buffer: c2.body), String(buffer: d2.body)].sorted() == ["c", "d"])
        channel.reject(c2.deliveryTag, requeue: false)
        channel.reject(d2.deliveryTag, requeue: false)
        #expect(try await channel.get(queue: queue) == nil)
    }

    @Test func passiveDeclareOfMissingQueueClosesOnlyThatChannel() async throws {
        let connection = try await Broker.connect()
        defer { Task { await connection.close() } }
        let doomed = try await connection.openChannel()
        let survivor = try await connection.openChannel()
        let missing = Broker.unique("missing")
        do {
            try await doomed.queueDeclare(missing, passive: true)
            Issue.record("a passive declare of a missing queue must fail")
        } catch let AMQPError.channelClosed(reason) {
            #expect(reason.replyCode == 404)
            #expect(reason.classID == 50 && reason.methodID == 10)
        }
        // The channel is closed for good; the connection and the other channel live on.
        await #expect(throws: AMQPError.self) { try await doomed.basicQos(prefetchCount: 1) }
        #expect(connection.state == .connected)
        let queue = Broker.unique("alive")
        try await survivor.queueDeclare(queue, exclusive: true)
        try await survivor.publish("still here", exchange: "", routingKey: queue)
        let m = try await within(.seconds(5)) { try await survivor.get(queue: queue, noAck: true) }
        #expect(m.map { String(buffer: $0.body) } == "still here")
        // A new channel opens fine (possibly reusing the id).
        let fresh = try await connection.openChannel()
        try await fresh.basicQos(prefetchCount: 5)
    }

    @Test func brokerCancelEndsTheConsumerWithAReason() async throws {
        let connection = try await Broker.connect()
        defer { Task { await connection.close() } }
        let channel = try await connection.openChannel()
        let other = try await connection.openChannel()
        let queue = Broker.unique("cancelled")
        try await channel.queueDeclare(queue, exclusive: true)
        let consumer = try await channel.consume(queue: queue)
        try await other.queueDelete(queue)
        let outcome: AMQPError? = try await within(.seconds(10)) {
            do {
                for try await _ in consumer {}
                return nil
            } catch let error as AMQPError {
                return error
            }
        }
        #expect(outcome == .consumerCancelled(consumerTag: consumer.tag))
        #expect(channel.closeReason == nil, "the channel itself stays open")
        try await channel.basicQos(prefetchCount: 1)
    }

    @Test func mandatoryUnroutablePublishIsReturned() async throws {
        let connection = try await Broker.connect()
        defer { Task { await connection.close() } }
        let channel = try await connection.openChannel()
        try await channel.confirmSelect()
        let returns = channel.returns()
        try await channel.publish("lost", exchange: "", routingKey: Broker.unique("nobody"), mandatory: true,
                                  properties: BasicProperties(messageID: "r1"))
        let returned = try await within(.seconds(5)) {
            var it = returns.makeAsyncIterator()
            return await it.next()
        }
        #expect(returned?.replyCode == 312)
        #expect(returned?.properties.messageID == "r1")
    }

    @Test func largeBodySpansManyFrames() async throws {
        let connection = try await Broker.connect()
        defer { Task { await connection.close() } }
        let channel = try await connection.openChannel()
        let queue = Broker.unique("large")
        try await channel.queueDeclare(queue, exclusive: true)
        try await channel.confirmSelect()
        let body = ByteBuffer(bytes: (0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try await channel.publish(body, exchange: "", routingKey: queue)
        let m = try #require(try await channel.get(queue: queue, noAck: true))
        #expect(m.body == body)
    }
}
