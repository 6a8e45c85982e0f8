import WarrenCore

/// The store's statements, written once for both dialects.
enum StoreSQL {
    /// Messages per multi-row insert (7 binds each: well under either database's bind limit).
    static let chunkSize = 200

    static func chunks(_ messages: [StoredMessage]) -> [ArraySlice<StoredMessage>] {
        stride(from: 0, to: messages.count, by: chunkSize).map { messages[$0..<min($0 + chunkSize, messages.count)] }
    }

    /// `(?1,?2,…),(…)` for `rows` rows of `columns` binds.
    static func values(rows: Int, columns: Int, dialect: SQLDialect) -> String {
        (0..<rows).map { r in "(" + (1...columns).map { dialect.p(r * columns + $0) }.joined(separator: ",") + ")" }
            .joined(separator: ",")
    }

    static func insertMessages(count: Int, dialect: SQLDialect) -> String {
        "INSERT INTO warren_messages (id, route, sender, type, ts, envelope, sort_key) VALUES "
            + values(rows: count, columns: 7, dialect: dialect) + " ON CONFLICT (id) DO NOTHING"
    }

    /// `(user, route)` pairs the messages make conversations of, each once.
    static func participantRows(_ messages: ArraySlice<StoredMessage>) -> [(user: String, route: String)] {
        var seen = Set<[String]>()
        var rows: [(user: String, route: String)] = []
        for m in messages {
            for user in m.participants where seen.insert([user, m.route]).inserted { rows.append((user, m.route)) }
        }
        return rows
    }

    static func insertParticipants(count: Int, dialect: SQLDialect) -> String {
        "INSERT INTO warren_participants (username, route) VALUES " + values(rows: count, columns: 2, dialect: dialect)
            + " ON CONFLICT (username, route) DO NOTHING"
    }

    /// Each route's newest message (by key) among the messages.
    static func latestPerRoute(_ messages: ArraySlice<StoredMessage>) -> [(route: String, id: String, key: String)] {
        var latest: [String: StoredMessage] = [:]
        for m in messages where latest[m.route].map({ m.sortKey > $0.sortKey }) ?? true { latest[m.route] = m }
        return latest.sorted { $0.key < $1.key }.map { ($0.key, $0.value.id, $0.value.sortKey) }
    }

    static func upsertRoutes(count: Int, dialect: SQLDialect) -> String {
        "INSERT INTO warren_routes (route, last_id, last_key) VALUES " + values(rows: count, columns: 3, dialect: dialect)
            + " ON CONFLICT (route) DO UPDATE SET last_id = excluded.last_id, last_key = excluded.last_key"
            + " WHERE excluded.last_key > warren_routes.last_key"
    }

    static let columns = "id, route, sender, type, ts, envelope, sort_key"

    /// Binds: (id, at) per fence. A fence written twice (its batch written again) stays once.
    static func insertFences(count: Int, dialect: SQLDialect) -> String {
        "INSERT INTO warren_fences (id, at) VALUES \(values(rows: count, columns: 2, dialect: dialect)) ON CONFLICT (id) DO NOTHING"
    }

    /// Messages after a key (and before another), of the routes a filter takes, newest first:
    /// the `sort_key` index for every route or a prefix, `(route, sort_key)` for one route.
    static func messages(after: String, below: String?, routes: RouteFilter, limit: Int, dialect: SQLDialect)
        -> (sql: String, binds: [SQLValue]) {
        var binds: [SQLValue] = [.text(after)]
        var sql = "SELECT \(columns) FROM warren_messages WHERE sort_key > \(dialect.p(1))"
        if let below {
            binds.append(.text(below))
            sql += " AND sort_key < \(dialect.p(binds.count))"
        }
        switch routes {
        case .route(let route):
            binds.append(.text(route))
            sql += " AND route = \(dialect.p(binds.count))"
        case .under(let prefix):
            binds.append(.text(prefix))
            binds.append(.text(prefix + "."))
            sql += " AND (route = \(dialect.p(binds.count - 1)) OR substr(route, 1, \(prefix.utf8.count + 1)) = \(dialect.p(binds.count)))"
        case .any:
            break
        }
        binds.append(.integer(Int64(limit)))
        return (sql + " ORDER BY sort_key DESC LIMIT \(dialect.p(binds.count))", binds)
    }

    /// Binds: id, route. The key of a message of the route.
    static func keyOf(dialect: SQLDialect) -> String {
        "SELECT sort_key FROM warren_messages WHERE id = \(dialect.p(1)) AND route = \(dialect.p(2))"
    }

    /// Binds: route, [before's key], limit + 1.
    static func history(before: Bool, dialect: SQLDialect) -> String {
        "SELECT \(columns) FROM warren_messages WHERE route = \(dialect.p(1))"
            + (before ? " AND sort_key < \(dialect.p(2))" : "") + " ORDER BY sort_key DESC LIMIT \(dialect.p(before ? 3 : 2))"
    }

    /// Rows fetched newest first, one more than the page: the page oldest first, and whether there is more.
    static func page(_ newestFirst: [StoredMessage], limit: Int) -> HistoryPage {
        HistoryPage(messages: Array(newestFirst.prefix(limit).reversed()), more: newestFirst.count > limit)
    }

    /// Binds: user, limit. Each conversation with its newest message and the user's marker.
    static func conversations(dialect: SQLDialect) -> String {
        """
        SELECT m.id, m.route, m.sender, m.type, m.ts, m.envelope, m.sort_key, rd.id AS read_id
        FROM warren_participants p
        JOIN warren_routes r ON r.route = p.route
        JOIN warren_messages m ON m.id = r.last_id
        LEFT JOIN warren_reads rd ON rd.username = p.username AND rd.route = p.route
        WHERE p.username = \(dialect.p(1))
        ORDER BY r.last_key DESC LIMIT \(dialect.p(2))
        """
    }

    /// Binds: user, user, then the uncounted types. Unread messages per route of the user.
    static func unreadCounts(uncounted: Int, dialect: SQLDialect) -> String {
        let skip = uncounted == 0 ? "" : " AND m.type NOT IN (" + (0..<uncounted).map { dialect.p(3 + $0) }.joined(separator: ",") + ")"
        return """
        SELECT m.route AS route, COUNT(*) AS n
        FROM warren_participants p
        JOIN warren_messages m ON m.route = p.route
        LEFT JOIN warren_reads rd ON rd.username = p.username AND rd.route = p.route
        WHERE p.username = \(dialect.p(1)) AND m.sender <> \(dialect.p(2)) AND m.sort_key > COALESCE(rd.sort_key, '')\(skip)
        GROUP BY m.route
        """
    }

    /// Binds: user, route, id, key. Moves the marker forward only.
    static func upsertRead(dialect: SQLDialect) -> String {
        "INSERT INTO warren_reads (username, route, id, sort_key) VALUES (\(dialect.p(1)), \(dialect.p(2)), \(dialect.p(3)), \(dialect.p(4))) "
            + "ON CONFLICT (username, route) DO UPDATE SET id = excluded.id, sort_key = excluded.sort_key WHERE excluded.sort_key > warren_reads.sort_key"
    }

    /// Binds: user, route.
    static func readMarker(dialect: SQLDialect) -> String {
        "SELECT id FROM warren_reads WHERE username = \(dialect.p(1)) AND route = \(dialect.p(2))"
    }
}
