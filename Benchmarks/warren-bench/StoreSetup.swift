import AMQPClient
import Foundation
import WarrenBenchKit

/// The conversation store of a bench run: off, or a fresh SQLite file or PostgreSQL database
/// (the private cluster of `scripts/postgres.sh`), with a store queue of its own.
enum StoreMode: String, Sendable, CaseIterable {
    case off, sqlite, postgres

    /// Warren's environment for a run with this store; `database` names the file or database.
    func environment(database: String, queue: String) -> [String: String] {
        switch self {
        case .off: return ["WARREN_STORE_ENABLED": "false"]
        case .sqlite:
            return ["WARREN_STORE_ENABLED": "true", "WARREN_STORE_URL": "sqlite://\(database)", "WARREN_STORE_QUEUE": queue]
        case .postgres:
            return ["WARREN_STORE_ENABLED": "true", "WARREN_STORE_URL": StoreSetup.postgresURL(database), "WARREN_STORE_QUEUE": queue]
        }
    }
}

enum StoreSetup {
    static let postgresBase = ProcessInfo.processInfo.environment["WARREN_BENCH_POSTGRES"] ?? "postgres://warren@127.0.0.1:15432"

    static func postgresURL(_ database: String) -> String { "\(postgresBase)/\(database)?sslmode=disable" }

    /// A new, empty database for `mode` (a file path for SQLite, a database name for PostgreSQL).
    static func freshDatabase(_ mode: StoreMode, name: String) throws -> String {
        switch mode {
        case .off: return ""
        case .sqlite:
            let path = "/tmp/\(name).sqlite"
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            return path
        case .postgres:
            try psql("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
            try psql("CREATE DATABASE \(name)")
            return name
        }
    }

    static func psql(_ statement: String) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "scripts/postgres.sh")
        p.arguments = ["psql", "-qc", statement]
        try p.run()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw BenchError.warren("psql \(statement) failed (is scripts/postgres.sh start run?)") }
    }
}

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
