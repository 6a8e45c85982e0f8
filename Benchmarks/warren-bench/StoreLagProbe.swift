import AMQPClient
import Foundation
import WarrenBenchKit

/// Watches a store queue's depth (ready messages) while a run's messages flow: the store's lag.
final class StoreLagProbe: @unchecked Sendable {
    let queue: String
    let connection: AMQPConnection
    let channel: AMQPChannel
    private(set) var maximum = 0
    private var task: Task<Void, Never>?

    private init(queue: String, connection: AMQPConnection, channel: AMQPChannel) {
        self.queue = queue
        self.connection = connection
        self.channel = channel
    }

    static func start(url: String, queue: String) async throws -> StoreLagProbe {
        var config = try AMQPConfiguration(url: url)
        config.recovery = RecoveryPolicy(enabled: false)
        config.connectionName = "warren-bench store lag"
        let connection = try await AMQPConnection.connect(configuration: config, logger: quietLogger)
        let probe = StoreLagProbe(queue: queue, connection: connection, channel: try await connection.openChannel())
        probe.task = Task {
            while !Task.isCancelled {
                if let depth = await probe.depth() { probe.maximum = max(probe.maximum, depth) }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        return probe
    }

    func depth() async -> Int? {
        guard let ok = try? await channel.queueDeclare(queue, passive: true) else { return nil }
        return Int(ok.messageCount)
    }

    /// Stops sampling; waits (at most `limit`) for the queue to drain and returns how long it took.
    func finish(limit: Duration = .seconds(120)) async -> Double? {
        task?.cancel()
        let start = ContinuousClock.now
        var drained: Double?
        while ContinuousClock.now - start < limit {
            if let d = await depth(), d == 0 {
                let elapsed = ContinuousClock.now - start
                drained = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                break
            }
            try? await Task.sleep(for: .milliseconds(100))
        }
        _ = try? await channel.queueDelete(queue)
        await connection.close()
        return drained
    }
}
