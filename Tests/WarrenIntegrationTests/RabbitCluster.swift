import Foundation
import Testing
import TestSupport
import WarrenCore

/// The local 3-node RabbitMQ cluster of `scripts/rabbitmq.sh cluster`.
enum RabbitCluster {
    static let ports = [5701, 5702, 5703]

    static func run(_ arguments: String...) async throws {
        let status = try await TestEnvironment.spawnAndWait(TestEnvironment.packageRoot.appendingPathComponent("scripts/rabbitmq.sh"),
                                                            ["cluster"] + arguments)
        guard status == 0 else { throw SocketError(description: "scripts/rabbitmq.sh cluster \(arguments) exited \(status)") }
    }

    /// The nodes' URLs, starting with node `first` (1...3).
    static func urls(from first: Int) -> [String] {
        (0..<3).map { k in "amqp://guest:guest@127.0.0.1:\(ports[(first - 1 + k) % 3])/%2f" }
    }
}
