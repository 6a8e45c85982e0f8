import WarrenCore

/// The conversation store on a SQL database (docs/protocol.md): the same statements and the same
/// logic for SQLite and PostgreSQL, which differ only in their ``SQLDatabase``.
public final class SQLConversationStore: ConversationStore {
    let database: any SQLDatabase
    var dialect: SQLDialect { database.dialect }

    init(database: any SQLDatabase) { self.database = database }

    /// Creates the tables, or brings those of an older version up to this one, in one
    /// transaction (on PostgreSQL under a lock, so nodes starting together take turns).
    public func migrate() async throws {
        let dialect = dialect
        let now = WallClock.milliseconds()
        try await database.transaction { session in
            if dialect == .postgres {
                // Text in any other encoding cannot hold every message (an emoji in a LATIN1
                // database is refused), and a refused message is given up: say so at start.
                let encoding = try await session.query("SHOW server_encoding").first?["server_encoding"]?.string ?? "?"
                guard encoding == "UTF8" else {
                    throw StoreDataError(description: "the database's encoding is \(encoding), and Warren keeps UTF-8 text (every script, "
                                         + "emoji): create the database with ENCODING 'UTF8' (createdb -E UTF8 -T template0 …)")
                }
                _ = try await session.query("SELECT 1 AS locked FROM (SELECT pg_advisory_xact_lock(\(StoreSchema.lockKey))) AS l")
            }
            for statement in StoreSchema.tables(dialect: dialect) { _ = try await session.query(statement) }
            let found = try await session.query("SELECT version FROM warren_schema").first?["version"]?.integer ?? StoreSchema.version
            guard found <= StoreSchema.version else {
                throw StoreDataError(description: "the store's schema is version \(found), newer than this Warren knows "
                                     + "(\(StoreSchema.version)): a newer Warren wrote it")
            }
            if found < 2 {
                for (sql, binds) in StoreSchema.upgradeToVersion2(dialect: dialect, now: now) { _ = try await session.query(sql, binds) }
            }
            for statement in StoreSchema.finish { _ = try await session.query(statement) }
        }
    }

    public func write(_ messages: [StoredMessage], fences: [String]) async throws {
        guard !messages.isEmpty || !fences.isEmpty else { return }
        let dialect = dialect
        let now = WallClock.milliseconds()
        try await database.transaction { session in
            if !fences.isEmpty {
                _ = try await session.query(StoreSQL.insertFences(count: fences.count, dialect: dialect),
                                            fences.flatMap { [.text($0), .integer(now)] })
            }
            for chunk in StoreSQL.chunks(messages) {
                _ = try await session.query(StoreSQL.insertMessages(count: chunk.count, dialect: dialect),
                                            chunk.flatMap { [.text($0.id), .text($0.route), .text($0.sender), .text($0.type),
                                                             .integer($0.ts), .text($0.envelope), .text($0.sortKey)] })
                let pairs = StoreSQL.participantRows(chunk)
                _ = try await session.query(StoreSQL.insertParticipants(count: pairs.count, dialect: dialect),
                                            pairs.flatMap { [.text($0.user), .text($0.route)] })
                let latest = StoreSQL.latestPerRoute(chunk)
                _ = try await session.query(StoreSQL.upsertRoutes(count: latest.count, dialect: dialect),
                                            latest.flatMap { [.text($0.route), .text($0.id), .text($0.key)] })
            }
        }
    }

    public func history(route: String, before: String?, limit: Int) async throws -> HistoryPage? {
        let dialect = dialect
        let rows = try await database.read { session -> [SQLRow]? in
            var beforeKey: [SQLValue] = []
            if let before {
                guard let key = try await Self.key(of: before, route: route, session: session, dialect: dialect) else { return nil }
                beforeKey = [.text(key)]
            }
            return try await session.query(StoreSQL.history(before: before != nil, dialect: dialect),
                                           [.text(route)] + beforeKey + [.integer(Int64(limit + 1))])
        }
        return try rows.map { StoreSQL.page(try $0.map(Self.message), limit: limit) }
    }

    public func position(of id: String) async throws -> (sortKey: String, route: String)? {
        let sql = "SELECT sort_key, route FROM warren_messages WHERE id = \(dialect.p(1))"
        let rows = try await database.read { session in try await session.query(sql, [.text(id)]) }
        guard let row = rows.first else { return nil }
        guard let key = row["sort_key"]?.string, let route = row["route"]?.string else {
            throw StoreDataError(description: "a stored row lacks a column or has the wrong type")
        }
        return (key, route)
    }

    public func messages(after: String, below: String?, routes: RouteFilter, limit: Int) async throws -> [StoredMessage] {
        let (sql, binds) = StoreSQL.messages(after: after, below: below, routes: routes, limit: limit, dialect: dialect)
        let rows = try await database.read { session in try await session.query(sql, binds) }
        return try rows.map(Self.message)
    }

    public func fenceWritten(_ id: String) async throws -> Bool {
        let sql = "SELECT 1 AS one FROM warren_fences WHERE id = \(dialect.p(1))"
        return try await database.read { session in try await session.query(sql, [.text(id)]) }.isEmpty == false
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

    public func markRead(user: String, route: String, id: String) async throws -> String? {
        let dialect = dialect
        return try await database.transaction { session in
            guard let key = try await Self.key(of: id, route: route, session: session, dialect: dialect) else { return nil }
            _ = try await session.query(StoreSQL.upsertRead(dialect: dialect), [.text(user), .text(route), .text(id), .text(key)])
            let rows = try await session.query(StoreSQL.readMarker(dialect: dialect), [.text(user), .text(route)])
            return rows.first?["id"]?.string ?? id
        }
    }

    public func boundPatterns() async throws -> [String: [String]] {
        let rows = try await database.read { session in
            try await session.query("SELECT queue, pattern FROM warren_store_bindings ORDER BY queue, pattern")
        }
        var bound: [String: [String]] = [:]
        for row in rows {
            guard let queue = row["queue"]?.string, let pattern = row["pattern"]?.string else { continue }
            bound[queue, default: []].append(pattern)
        }
        return bound
    }

    public func recordBoundPatterns(queue: String, _ patterns: [String]) async throws {
        let dialect = dialect
        try await database.transaction { session in
            _ = try await session.query("DELETE FROM warren_store_bindings WHERE queue = \(dialect.p(1))", [.text(queue)])
            for pattern in Set(patterns) {
                _ = try await session.query("INSERT INTO warren_store_bindings (queue, pattern) VALUES (\(dialect.p(1)), \(dialect.p(2)))",
                                            [.text(queue), .text(pattern)])
            }
        }
    }

    public func prune(before cutoff: Int64) async throws -> Int {
        let sql = "DELETE FROM warren_messages WHERE sort_key < \(dialect.p(1)) RETURNING id"
        let fences = "DELETE FROM warren_fences WHERE at < \(dialect.p(1))"
        let fenceCutoff = WallClock.milliseconds() - StoreFence.kept
        return try await database.transaction { session in
            _ = try await session.query(fences, [.integer(fenceCutoff)])
            return try await session.query(sql, [.text(SortKey.prefix(cutoff))]).count
        }
    }

    /// Where the message `id` of `route` stands: its key if it is kept, else the key a believable
    /// UUIDv7 gives itself (a message not written yet, or pruned), else nil.
    static func key(of id: String, route: String, session: any SQLSession, dialect: SQLDialect) async throws -> String? {
        let rows = try await session.query(StoreSQL.keyOf(dialect: dialect), [.text(id), .text(route)])
        return rows.first?["sort_key"]?.string ?? SortKey.placing(id: id, now: WallClock.milliseconds())
    }

    public func ping() async throws {
        _ = try await database.read { session in try await session.query("SELECT 1 AS one") }
    }

    public func close() async { await database.close() }

    static func message(_ row: SQLRow) throws -> StoredMessage {
        guard let id = row["id"]?.string, let route = row["route"]?.string, let sender = row["sender"]?.string,
              let type = row["type"]?.string, let ts = row["ts"]?.integer, let envelope = row["envelope"]?.string,
              let sortKey = row["sort_key"]?.string else {
            throw StoreDataError(description: "a stored row lacks a column or has the wrong type")
        }
        return StoredMessage(id: id, route: route, sender: sender, type: type, ts: ts, envelope: envelope, sortKey: sortKey)
    }
}
