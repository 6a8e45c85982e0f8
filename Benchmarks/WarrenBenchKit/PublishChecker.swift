import AMQPClient
import NIOCore

/// Counts what the publishers' messages became on the broker: one plain AMQP consumer bound
/// with `#` to the run's own exchange. A body is either the bench's stamp (STOMP and AMQP
/// publishers) or Warren's envelope with the stamp in `"body"` (Warren's doors); the
/// recorder's client 0 sees every sequence number once.
public final class PublishChecker: AMQPDeliverySink, @unchecked Sendable {
    public let connection: AMQPConnection
    let recorder: Recorder

    init(connection: AMQPConnection, recorder: Recorder) {
        self.connection = connection
        self.recorder = recorder
    }

    /// Declares `exchange` (topic, durable: as Warren does) and binds the checker's queue.
    public static func open(url: String, exchange: String, recorder: Recorder) async throws -> PublishChecker {
        var config = try AMQPConfiguration(url: url)
        config.recovery = RecoveryPolicy(enabled: false)
        config.connectionName = "warren-bench publish checker"
        let connection = try await AMQPConnection.connect(configuration: config, eventLoopGroup: recorder.loop, logger: quietLogger)
        let checker = PublishChecker(connection: connection, recorder: recorder)
        let channel = try await connection.openChannel()
        try await channel.exchangeDeclare(exchange, type: "topic", durable: true)
        let queue = try await channel.queueDeclare("", exclusive: true, autoDelete: true).queue
        try await channel.queueBind(queue: queue, exchange: exchange, routingKey: "#")
        try await channel.consume(queue: queue, noAck: true, exclusive: true, sink: checker)
        return checker
    }

    public func deliver(_ message: AMQPMessage) {
        let now = BenchClock.now()
        let stamp = message.body.withUnsafeReadableBytes { bytes -> Stamp? in
            if bytes.first == UInt8(ascii: "{") {
                guard let b = find(#""body":""#, in: bytes) else { return nil }
                return Stamp.parse(bytes, from: b + 8)
            }
            return Stamp.parse(bytes, from: 0)
        }
        recorder.record(client: 0, stamp: stamp, now: now)
    }

    public func finish(_ error: AMQPError?) {
        if let error { recorder.loop.execute { self.recorder.error("publish checker ended: \(error)") } }
    }

    /// Deletes the run's exchange and closes.
    public func close(exchange: String) async {
        if let channel = try? await connection.openChannel() { try? await channel.exchangeDelete(exchange) }
        await connection.close()
    }
}
