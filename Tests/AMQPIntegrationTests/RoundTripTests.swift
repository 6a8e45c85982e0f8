import AMQPClient
import NIOCore
import NIOPosix
import Testing

@Suite("Broker round trips", .serialized)
struct RoundTripTests {
    @Test func declareBindPublishConsume() async throws {
        let connection = try await Broker.connect()
        let channel = try await connection.openChannel()
        let exchange = Broker.unique("x")
        let queue = Broker.unique("q")
        try await channel.exchangeDeclare(exchange, type: "topic", durable: false, autoDelete: true)
        try await channel.queueDeclare(queue, exclusive: true)
        try await channel.queueBind(queue: queue, exchange: exchange, routingKey: "#.alice.#")
        try await channel.confirmSelect()
        try await channel.publish("hello", exchange: exchange, routingKey: "alice.bob",
                                  properties: BasicProperties(contentType: "text/plain", headers: ["from": "alice"], messageID: "m1"))
        try await channel.publish("not for alice", exchange: exchange, routingKey: "bob.carol")
        let consumer = try await channel.consume(queue: queue)
        let message = try await within(.seconds(10)) {
            var it = consumer.makeAsyncIterator()
            return try await it.next()
        }
        let m = try #require(message)
        #expect(String(buffer: m.body) == "hello")
        #expect(m.routingKey == "alice.bob")
        #expect(m.properties.messageID == "m1")
        #expect(m.properties.headers?["from"]?.stringValue == "alice")
        #expect(m.redelivered == false)
        channel.ack(m.deliveryTag)
        try await channel.cancel(consumerTag: consumer.tag)
        #expect(try await channel.get(queue: queue) == nil)
        await connection.close()
        #expect(connection.state == .closed(nil))
    }

    /// Acks written on another event loop are gathered per tick and taken by the link in one
    /// batch: every one of them must reach the broker (closing the channel would requeue any
    /// it did not get, and a fresh channel would find it).
    @Test func acksFromAnotherLoopInOneTickAllReachTheBroker() async throws {
        let connection = try await Broker.connect()
        let channel = try await connection.openChannel()
        let queue = Broker.unique("q")
        try await channel.queueDeclare(queue, durable: false, exclusive: false, autoDelete: false)
        try await channel.confirmSelect()
        for k in 0..<50 { try await channel.publish("m\(k)", exchange: "", routingKey: queue) }
        let consuming = try await connection.openChannel()
        let consumer = try await consuming.consume(queue: queue)
        let messages = try await within(.seconds(10)) {
            var got: [AMQPMessage] = []
            var it = consumer.makeAsyncIterator()
            while got.count < 50, let m = try await it.next() { got.append(m) }
            return got
        }
        #expect(messages.count == 50)
        let ackLoop = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = ackLoop.next()
        try await loop.submit { for m in messages { consuming.ack(m.deliveryTag) } }.get()
        try await loop.submit {}.get()  // the tick's batch has left for the link's loop
        try await consuming.close()
        #expect(try await channel.get(queue: queue) == nil, "an ack of the batch was lost: its message came back")
        _ = try? await channel.queueDelete(queue)
        await connection.close()
        try await ackLoop.shutdownGracefully()
    }
}
