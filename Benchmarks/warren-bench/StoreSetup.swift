import AMQPClient
import Foundation
import WarrenBenchKit

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
