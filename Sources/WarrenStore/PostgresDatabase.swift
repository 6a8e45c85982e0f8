import Foundation
import Logging
import NIOSSL
import PostgresNIO
import WarrenCore

/// PostgreSQL through postgres-nio (`store.url = "postgres://user:pass@host:5432/db"`): several
/// nodes share one database. A pool of connections (postgres-nio's `PostgresClient`, run for
/// the store's lifetime); each batch is one transaction.
final class PostgresDatabase: SQLDatabase {
    let dialect = SQLDialect.postgres
    let client: PostgresClient
    let logger: Logger
    private let runner: Task<Void, Never>

    private init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
        self.runner = Task { await client.run() }
    }

    /// `postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require]`.
    static func configuration(url: String) throws -> PostgresClient.Configuration {
        guard let parts = URLComponents(string: url), ["postgres", "postgresql"].contains(parts.scheme ?? ""),
              let host = parts.host, !host.isEmpty, let user = parts.user, !user.isEmpty else {
            throw StoreDataError(description: "store.url must be postgres://user:pass@host:5432/db")
        }
        let database = String(parts.path.drop { $0 == "/" })
        let tls: PostgresClient.Configuration.TLS
        switch parts.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "prefer" {
        case "disable": tls = .disable
        case "prefer": tls = .prefer(.makeClientConfiguration())
        case "require": tls = .require(.makeClientConfiguration())
        case let other: throw StoreDataError(description: "store.url: sslmode \(other) is not disable, prefer or require")
        }
        var configuration = PostgresClient.Configuration(host: host, port: parts.port ?? 5432, username: user,
                                                         password: parts.password, database: database.isEmpty ? nil : database,
                                                         tls: tls)
        configuration.options.maximumConnections = 8
        return configuration
    }

    static func open(url: String, logger: Logger) async throws -> PostgresDatabase {
        let database = PostgresDatabase(client: PostgresClient(configuration: try configuration(url: url), backgroundLogger: logger),
                                        logger: logger)
        // `run()` starts on a task of its own; a lease asked for before it has started is served
        // all the same, but logged as a warning. Give it a moment first.
        try await Task.sleep(for: .milliseconds(20))
        return database
    }

    func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws -> T {
        do {
            return try await client.withTransaction(logger: logger) { connection in
                try await body(Session(connection: connection, logger: logger))
            }
        } catch let error as PostgresTransactionError where error.closureError != nil && error.rollbackError == nil {
            // Rolled back: what went wrong is the body's error, as on SQLite.
            throw error.closureError!
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws -> T {
        try await client.withConnection { connection in
            try await body(Session(connection: connection, logger: logger))
        }
    }

    func close() async { runner.cancel() }

    struct Session: SQLSession {
        let connection: PostgresConnection
        let logger: Logger

        func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
            var bindings = PostgresBindings(capacity: binds.count)
            for value in binds {
                switch value {
                case .text(let s): bindings.append(s)
                case .integer(let n): bindings.append(n)
                case .null: bindings.appendNull()
                }
            }
            do {
                return try await rows(PostgresQuery(unsafeSQL: sql, binds: bindings))
            } catch let error as PSQLError {
                guard let state = error.serverInfo?[.sqlState], Self.refusesData(sqlState: state) else { throw error }
                throw StoreRefusedData("PostgreSQL \(state): \(error.serverInfo?[.message] ?? "")")
            }
        }

        /// A data exception (class 22: a NUL in text, say) or a program limit (class 54): what a
        /// statement holds, which no retry changes (an outage, a lock or a serialization failure
        /// is another class).
        static func refusesData(sqlState: String) -> Bool { sqlState.hasPrefix("22") || sqlState.hasPrefix("54") }

        private func rows(_ query: PostgresQuery) async throws -> [SQLRow] {
            var rows: [SQLRow] = []
            for try await row in try await connection.query(query, logger: logger) {
                var out: SQLRow = [:]
                for cell in row {
                    guard cell.bytes != nil else {
                        out[cell.columnName] = .null
                        continue
                    }
                    switch cell.dataType {
                    case .int8, .int4, .int2: out[cell.columnName] = .integer(try cell.decode(Int64.self))
                    default: out[cell.columnName] = .text(try cell.decode(String.self))
                    }
                }
                rows.append(out)
            }
            return rows
        }
    }
}
