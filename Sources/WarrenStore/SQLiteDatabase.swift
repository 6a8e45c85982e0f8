import Logging
import SQLiteNIO
import WarrenCore

/// SQLite through sqlite-nio (`store.url = "sqlite://<path>"`): one file, nothing to run, one node.
///
/// Two connections in WAL mode: transactions go one at a time through the writer connection;
/// reads go through the other and never wait for a write.
final class SQLiteDatabase: SQLDatabase {
    let dialect = SQLDialect.sqlite
    let writer: SQLiteConnection
    let reader: SQLiteConnection
    private let writes = SerialJobQueue()
    private let reads = SerialJobQueue()

    private init(writer: SQLiteConnection, reader: SQLiteConnection) {
        self.writer = writer
        self.reader = reader
    }

    static func open(path: String, logger: Logger) async throws -> SQLiteDatabase {
        let writer = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
        do {
            for pragma in ["PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL", "PRAGMA busy_timeout = 5000"] {
                _ = try await writer.query(pragma)
            }
            let reader = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
            _ = try await reader.query("PRAGMA busy_timeout = 5000")
            return SQLiteDatabase(writer: writer, reader: reader)
        } catch {
            try? await writer.close()
            throw error
        }
    }

    func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws -> T {
        try await writes.run { [writer] in
            let session = Session(connection: writer)
            _ = try await session.query("BEGIN IMMEDIATE")
            do {
                let result = try await body(session)
                _ = try await session.query("COMMIT")
                return result
            } catch {
                _ = try? await session.query("ROLLBACK")
                throw error
            }
        }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws -> T {
        try await reads.run { [reader] in try await body(Session(connection: reader)) }
    }

    func close() async {
        try? await writer.close()
        try? await reader.close()
    }

    struct Session: SQLSession {
        let connection: SQLiteConnection

        func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow] {
            let rows: [SQLiteRow]
            do {
                rows = try await connection.query(sql, binds.map { value -> SQLiteData in
                    switch value {
                    case .text(let s): return .text(s)
                    case .integer(let n): return .integer(Int(n))
                    case .null: return .null
                    }
                })
            } catch let error as SQLiteError where error.reason == .tooBig {
                // A value past SQLite's length limit: no retry changes that.
                throw StoreRefusedData("SQLite: \(error.message)")
            }
            return rows.map { row in
                var out: SQLRow = [:]
                for column in row.columns {
                    switch column.data {
                    case .text(let s): out[column.name] = .text(s)
                    case .integer(let n): out[column.name] = .integer(Int64(n))
                    default: out[column.name] = .null
                    }
                }
                return out
            }
        }
    }
}
