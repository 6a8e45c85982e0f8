import AMQPClient
import NIOCore

/// A plain AMQP publisher with publisher confirms, one connection each (the anchor for
/// publishing through Warren): on ``start()``, `count` persistent publishes to `routingKey`,
/// each written when the one before was confirmed; the recorder gets publish → confirm.
/// Bodies are stamped `firstSeq + i`. Everything runs on the recorder's loop.
public final class AMQPPublishClient: @unchecked Sendable {
    public let connection: AMQPConnection
    let channel: AMQPChannel
    let exchange: String
    let routingKey: String
    let count: Int
    let firstSeq: Int
    let index: Int
    let recorder: Recorder
    private var published = 0

    init(connection: AMQPConnection, channel: AMQPChannel, exchange: String, routingKey: String, count: Int, firstSeq: Int,
         index: Int, recorder: Recorder) {
        self.connection = connection
        self.channel = channel
        self.exchange = exchange
        self.routingKey = routingKey
        self.count = count
        self.firstSeq = firstSeq
        self.index = index
        self.recorder = recorder
    }

    public static func open(url: String, exchange: String, routingKey: String, count: Int, firstSeq: Int, index: Int,
                            recorder: Recorder) async throws -> AMQPPublishClient {
        var config = try AMQPConfiguration(url: url)
        config.recovery = RecoveryPolicy(enabled: false)
        config.connectionName = "warren-bench publisher \(index)"
        let connection = try await AMQPConnection.connect(configuration: config, eventLoopGroup: recorder.loop, logger: quietLogger)
        let channel = try await connection.openChannel()
        try await channel.confirmSelect()
        return AMQPPublishClient(connection: connection, channel: channel, exchange: exchange, routingKey: routingKey,
                                 count: count, firstSeq: firstSeq, index: index, recorder: recorder)
    }

    public func start() {
        recorder.loop.execute { self.publishNext() }
    }

    private func publishNext() {
        guard published < count else { return }
        let sent = BenchClock.now()
        let seq = published
        var body = ByteBuffer()
        body.reserveCapacity(32)
        Stamp(seq: firstSeq + seq, sentNanos: sent).write(to: &body)
        published += 1
        do {
            let confirm = try channel.startPublish(body, exchange: exchange, routingKey: routingKey,
                                                   properties: BasicProperties(contentType: "text/plain", deliveryMode: 2))
            confirm.futureResult.hop(to: recorder.loop).whenComplete { [self] result in
                switch result {
                case .success: recorder.record(client: index, stamp: Stamp(seq: seq, sentNanos: sent), now: BenchClock.now())
                case .failure(let error): recorder.error("amqp publisher \(index): \(error)")
                }
                publishNext()
            }
        } catch {
            recorder.error("amqp publisher \(index): \(error)")
        }
    }
}
