import AMQPClient
import NIOConcurrencyHelpers
import NIOCore
import WarrenBenchKit

/// Counts the messages crossing the presence exchange (a queue of the bench's own bound to it).
final class PresenceTrafficCounter: AMQPDeliverySink, Sendable {
    let connection: AMQPConnection
    private let counts = NIOLockedValueBox((messages: 0, bytes: 0))

    private init(connection: AMQPConnection) { self.connection = connection }

    static func start(url: String, exchange: String) async throws -> PresenceTrafficCounter {
        var config = try AMQPConfiguration(url: url)
        config.recovery = RecoveryPolicy(enabled: false)
        config.connectionName = "warren-bench presence traffic"
        let connection = try await AMQPConnection.connect(configuration: config, logger: quietLogger)
        let counter = PresenceTrafficCounter(connection: connection)
        let channel = try await connection.openChannel()
        let queue = try await channel.queueDeclare("", exclusive: true, autoDelete: true).queue
        try await channel.queueBind(queue: queue, exchange: exchange, routingKey: "")
        try await channel.consume(queue: queue, noAck: true, exclusive: true, sink: counter)
        return counter
    }

    func deliver(_ message: AMQPMessage) {
        counts.withLockedValue {
            $0.messages += 1
            $0.bytes += message.body.readableBytes
        }
    }

    func finish(_ error: AMQPError?) {}

    func stop() async -> (messages: Int, bytes: Int) {
        await connection.close()
        return counts.withLockedValue { $0 }
    }
}
