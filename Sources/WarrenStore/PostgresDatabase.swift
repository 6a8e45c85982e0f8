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

    /// What `store.url` names: `postgres://user[:password]@host[:port]/database[?sslmode=disable|prefer|require]`.
    struct Target {
        let host: String
        let port: Int
        let user: String
        let password: String?
        let database: String?
        let sslmode: String

        init(url: String) throws {
            guard let parts = URLComponents(string: url), ["postgres", "postgresql"].contains(parts.scheme ?? ""),
                  let host = parts.host, !host.isEmpty, let user = parts.user, !user.isEmpty else {
                throw StoreDataError(description: "store.url must be postgres://user:pass@host:5432/db")
            }
            let database = String(parts.path.drop { $0 == "/" })
            sslmode = parts.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "prefer"
            guard ["disable", "prefer", "require"].contains(sslmode) else {
                throw StoreDataError(description: "store.url: sslmode \(sslmode) is not disable, prefer or require")
            }
            (self.host, self.port, self.user, self.password) = (host, parts.port ?? 5432, user, parts.password)
            self.database = database.isEmpty ? nil : database
        }

        var client: PostgresClient.Configuration {
            let tls: PostgresClient.Configuration.TLS = switch sslmode {
            case "disable": .disable
            case "require": .require(.makeClientConfiguration())
            default: .prefer(.makeClientConfiguration())
            }
            var configuration = PostgresClient.Configuration(host: host, port: port, username: user, password: password,
                                                             database: database, tls: tls)
            configuration.options.maximumConnections = 8
            return configuration
        }

        func connection() throws -> PostgresConnection.Configuration {
            let tls: PostgresConnection.Configuration.TLS = switch sslmode {
            case "disable": .disable
            case "require": .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            default: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
            return PostgresConnection.Configuration(host: host, port: port, username: user, password: password,
                                                    database: database, tls: tls)
        }
    }

    static func configuration(url: String) throws -> PostgresClient.Configuration {
        try Target(url: url).client
    }

    /// Opens a pool on the database at `url` once it takes a login. The pool's leases would wait
    /// for a connection however long that takes, so a node started with a wrong user or database,
    /// or before its database, hung at start, serving nothing, with nothing of Warren's in the
    /// log. A login the server refuses (class 28, a role or password; 3D, no such database) or
    /// TLS it cannot give throws at once; a database that does not answer (connection refused,
    /// still starting, too many connections) is tried again, logged, for `wait` and then throws.
    static func open(url: String, logger: Logger, wait: Duration = .seconds(60)) async throws -> PostgresDatabase {
        let target = try Target(url: url)
        try await awaitLogin(target, logger: logger, wait: wait)
        let database = PostgresDatabase(client: PostgresClient(configuration: target.client, backgroundLogger: logger),
                                        logger: logger)
        // `run()` starts on a task of its own; a lease asked for before it has started is served
        // all the same, but logged as a warning. Give it a moment first.
        try await Task.sleep(for: .milliseconds(20))
        return database
    }

    private static func awaitLogin(_ target: Target, logger: Logger, wait: Duration) async throws {
        let deadline = ContinuousClock.now + wait
        let configuration = try target.connection()
        var pause = Duration.milliseconds(500)
        var tries = 0
        while true {
            tries += 1
            do {
                let connection = try await PostgresConnection.connect(configuration: configuration, id: tries, logger: logger)
                try? await connection.close()
                return
            } catch let error as PSQLError where Self.isPassing(error) {
                let reason = Self.explain(error)
                guard ContinuousClock.now + pause < deadline else {
                    throw StoreDataError(description: "PostgreSQL at \(target.host):\(target.port) did not take a login "
                        + "within \(wait) (\(tries) tries): \(reason)")
                }
                logger.warning("the conversation store's database does not answer yet; trying again", metadata: [
                    "host": "\(target.host):\(target.port)", "error": "\(reason)", "retry_in": "\(pause)"])
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(5))
            } catch let error as PSQLError {
                throw StoreDataError(description: "PostgreSQL at \(target.host):\(target.port) refused the login: \(Self.explain(error))")
            }
        }
    }

    /// Whether a failed login may pass by itself: no answer (refused, reset, timed out), or the
    /// server starting, shutting down or full (SQLSTATE classes 08, 53, 57).
    static func isPassing(_ error: PSQLError) -> Bool {
        switch error.code {
        case .connectionError, .serverClosedConnection, .uncleanShutdown: return true
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            return ["08", "53", "57"].contains(String(state.prefix(2)))
        default: return false
        }
    }

    /// PSQLError's own description is a placeholder (it hides what a server says); this is what
    /// an operator needs: the server's message and SQLSTATE, or the connection's error.
    static func explain(_ error: PSQLError) -> String {
        if let message = error.serverInfo?[.message] {
            return "\(message) (SQLSTATE \(error.serverInfo?[.sqlState] ?? "?"))"
        }
        if error.code == .sslUnsupported { return "the server offers no TLS, which sslmode=require asks for" }
        if let underlying = error.underlying { return "\(error.code): \(underlying)" }
        return "\(error.code)"
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
