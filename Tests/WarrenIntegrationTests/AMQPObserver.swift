import AMQPClient
import Foundation
import NIOCore
import Testing
import WarrenCore

/// An AMQP client on the test broker, with its deliveries in a mailbox.
struct AMQPObserver {
    let connection: AMQPConnection
    let channel: AMQPChannel
    let messages = Mailbox<AMQPMessage>()

    static func bound(to exchange: String, pattern: String) async throws -> AMQPObserver {
        let connection = try await AMQPConnection.connect(configuration: try AMQPConfiguration(url: WarrenInstance.brokerURL))
        let channel = try await connection.openChannel()
        let queue = try await channel.queueDeclare("", exclusive: true).queue
        try await channel.queueBind(queue: queue, exchange: exchange, routingKey: pattern)
        let observer = AMQPObserver(connection: connection, channel: channel)
        let consumer = try await channel.consume(queue: queue, noAck: true)
        Task {
            for try await m in consumer { await observer.messages.append(m) }
        }
        return observer
    }

    func close() async { await connection.close() }
}
