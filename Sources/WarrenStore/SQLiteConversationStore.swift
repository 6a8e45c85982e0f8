import Logging
import NIOCore
import SQLiteNIO
import WarrenCore

/// The embedded backend (`store.url = "sqlite://<path>"`): one file, nothing to run, one node.
///
/// Two connections in WAL mode: writes (batches, read markers, pruning) go one at a time
/// through the writer connection, each batch one transaction; history and conversation lists
/// read through the other, never waiting for a write.
public final class SQLiteConversationStore: ConversationStore {
    let writer: SQLiteConnection
    let reader: SQLiteConnection
    private let writes = SerialJobQueue()
    private let reads = SerialJobQueue()

    private init(writer: SQLiteConnection, reader: SQLiteConnection) {
        self.writer = writer
        self.reader = reader
    }

    /// Opens (creating if needed) the database file at `path`.
    public static func open(path: String, logger: Logger) async throws -> SQLiteConversationStore {
        let writer = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
        do {
            for pragma in ["PRAGMA journal_mode = WAL", "PRAGMA synchronous = NORMAL", "PRAGMA busy_timeout = 5000"] {
                _ = try await writer.query(pragma)
            }
            let reader = try await SQLiteConnection.open(storage: .file(path: path), logger: logger)
            _ = try await reader.query("PRAGMA busy_timeout = 5000")
            return SQLiteConversationStore(writer: writer, reader: reader)
        } catch {
            try? await writer.close()
            throw error
        }
    }

    public func migrate() async throws {
        try await writes.run { [writer] in
            for statement in StoreSchema.statements(dialect: .sqlite) { _ = try await writer.query(statement) }
        }
    }

    public func write(_ messages: [StoredMessage]) async throws {
        guard !messages.isEmpty else { return }
        try await writes.run { [writer] in
            _ = try await writer.query("BEGIN IMMEDIATE")
            do {
                for chunk in StoreSQL.chunks(messages) {
                    _ = try await writer.query(StoreSQL.insertMessages(count: chunk.count, dialect: .sqlite),
                                               chunk.flatMap { [.text($0.id), .text($0.route), .text($0.sender), .text($0.type),
                                                                .integer(Int($0.ts)), .text($0.envelope)] })
                    let pairs = StoreSQL.participantRows(chunk)
                    _ = try await writer.query(StoreSQL.insertParticipants(count: pairs.count, dialect: .sqlite),
                                               pairs.flatMap { [.text($0.user), .text($0.route)] })
                    let latest = StoreSQL.latestPerRoute(chunk)
                    _ = try await writer.query(StoreSQL.upsertRoutes(count: latest.count, dialect: .sqlite),
                                               latest.flatMap { [.text($0.route), .text($0.id)] })
                }
                _ = try await writer.query("COMMIT")
            } catch {
                _ = try? await writer.query("ROLLBACK")
                throw error
            }
        }
    }

    public func history(route: String, before: String?, limit: Int) async throws -> HistoryPage {
        let rows = try await reads.run { [reader] in
            try await reader.query(StoreSQL.history(before: before != nil, dialect: .sqlite),
                                   [.text(route)] + (before.map { [.text($0)] } ?? []) + [.integer(limit + 1)])
        }
        return StoreSQL.page(try rows.map(Self.message), limit: limit)
    }

    public func conversations(user: String, uncountedTypes: [String], limit: Int) async throws -> [ConversationSummary] {
        try await reads.run { [reader] in
            let rows = try await reader.query(StoreSQL.conversations(dialect: .sqlite), [.text(user), .integer(limit)])
            let counts = try await reader.query(StoreSQL.unreadCounts(uncounted: uncountedTypes.count, dialect: .sqlite),
                                                [.text(user), .text(user)] + uncountedTypes.map { .text($0) })
            var unread: [String: Int] = [:]
            for row in counts {
                guard let route = row.column("route")?.string, let n = row.column("n")?.integer else { continue }
                unread[route] = Int(n)
            }
            return try rows.map { row in
                let last = try Self.message(row)
                return ConversationSummary(route: last.route, last: last, unread: unread[last.route] ?? 0,
                                           read: row.column("read_id")?.string)
            }
        }
    }

    public func markRead(user: String, route: String, id: String) async throws -> String {
        try await writes.run { [writer] in
            _ = try await writer.query(StoreSQL.upsertRead(dialect: .sqlite), [.text(user), .text(route), .text(id)])
            let rows = try await writer.query(StoreSQL.readMarker(dialect: .sqlite), [.text(user), .text(route)])
            return rows.first?.column("id")?.string ?? id
        }
    }

    public func prune(before cutoff: Int64) async throws -> Int {
        try await writes.run { [writer] in
            let rows = try await writer.query("DELETE FROM warren_messages WHERE ts < ?1 RETURNING id", [.integer(Int(cutoff))])
            return rows.count
        }
    }

    public func ping() async throws {
        _ = try await reads.run { [reader] in try await reader.query("SELECT 1") }
    }

    public func close() async {
        try? await writer.close()
        try? await reader.close()
    }

    static func message(_ row: SQLiteRow) throws -> StoredMessage {
        guard let id = row.column("id")?.string, let route = row.column("route")?.string, let sender = row.column("sender")?.string,
              let type = row.column("type")?.string, let ts = row.column("ts")?.integer,
              let envelope = row.column("envelope")?.string else {
            throw StoreDataError(description: "a stored row lacks a column")
        }
        return StoredMessage(id: id, route: route, sender: sender, type: type, ts: Int64(ts), envelope: envelope)
    }
}
