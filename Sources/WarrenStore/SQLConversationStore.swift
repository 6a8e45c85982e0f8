import WarrenCore

/// The conversation store on a SQL database (DESIGN §10): the same statements and the same
/// logic for SQLite and PostgreSQL, which differ only in their ``SQLDatabase``.
public final class SQLConversationStore: ConversationStore {
    let database: any SQLDatabase
    var dialect: SQLDialect { database.dialect }

    init(database: any SQLDatabase) { self.database = database }

    public func migrate() async throws {
        let statements = StoreSchema.statements(dialect: dialect)
        try await database.transaction { session in
            for statement in statements { _ = try await session.query(statement) }
        }
    }

    public func write(_ messages: [StoredMessage]) async throws {
        guard !messages.isEmpty else { return }
        let dialect = dialect
        try await database.transaction { session in
            for chunk in StoreSQL.chunks(messages) {
                _ = try await session.query(StoreSQL.insertMessages(count: chunk.count, dialect: dialect),
                                            chunk.flatMap { [.text($0.id), .text($0.route), .text($0.sender), .text($0.type),
                                                             .integer($0.ts), .text($0.envelope)] })
                let pairs = StoreSQL.participantRows(chunk)
                _ = try await session.query(StoreSQL.insertParticipants(count: pairs.count, dialect: dialect),
                                            pairs.flatMap { [.text($0.user), .text($0.route)] })
                let latest = StoreSQL.latestPerRoute(chunk)
                _ = try await session.query(StoreSQL.upsertRoutes(count: latest.count, dialect: dialect),
                                            latest.flatMap { [.text($0.route), .text($0.id)] })
            }
        }
    }

    public func history(route: String, before: String?, limit: Int) async throws -> HistoryPage {
        let sql = StoreSQL.history(before: before != nil, dialect: dialect)
        let binds: [SQLValue] = [.text(route)] + (before.map { [.text($0)] } ?? []) + [.integer(Int64(limit + 1))]
        let rows = try await database.read { session in try await session.query(sql, binds) }
        return StoreSQL.page(try rows.map(Self.message), limit: limit)
    }

    public func conversations(user: String, uncountedTypes: [String], limit: Int) async throws -> [ConversationSummary] {
        let dialect = dialect
        let (rows, counts) = try await database.read { session in
            (try await session.query(StoreSQL.conversations(dialect: dialect), [.text(user), .integer(Int64(limit))]),
             try await session.query(StoreSQL.unreadCounts(uncounted: uncountedTypes.count, dialect: dialect),
                                     [.text(user), .text(user)] + uncountedTypes.map { .text($0) }))
        }
        var unread: [String: Int] = [:]
        for row in counts {
            guard let route = row["route"]?.string, let n = row["n"]?.integer else { continue }
            unread[route] = Int(n)
        }
        return try rows.map { row in
            let last = try Self.message(row)
            return ConversationSummary(route: last.route, last: last, unread: unread[last.route] ?? 0, read: row["read_id"]?.string)
        }
    }

    public func markRead(user: String, route: String, id: String) async throws -> String {
        let dialect = dialect
        return try await database.transaction { session in
            _ = try await session.query(StoreSQL.upsertRead(dialect: dialect), [.text(user), .text(route), .text(id)])
            let rows = try await session.query(StoreSQL.readMarker(dialect: dialect), [.text(user), .text(route)])
            return rows.first?["id"]?.string ?? id
        }
    }

    public func prune(before cutoff: Int64) async throws -> Int {
        let sql = "DELETE FROM warren_messages WHERE ts < \(dialect.p(1)) RETURNING id"
        return try await database.transaction { session in try await session.query(sql, [.integer(cutoff)]).count }
    }

    public func ping() async throws {
        _ = try await database.read { session in try await session.query("SELECT 1 AS one") }
    }

    public func close() async { await database.close() }

    static func message(_ row: SQLRow) throws -> StoredMessage {
        guard let id = row["id"]?.string, let route = row["route"]?.string, let sender = row["sender"]?.string,
              let type = row["type"]?.string, let ts = row["ts"]?.integer, let envelope = row["envelope"]?.string else {
            throw StoreDataError(description: "a stored row lacks a column or has the wrong type")
        }
        return StoredMessage(id: id, route: route, sender: sender, type: type, ts: ts, envelope: envelope)
    }
}
