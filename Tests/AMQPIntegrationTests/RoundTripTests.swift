import AMQPClient
import NIOCore
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
}
