/// The store's tables (DESIGN §10), created at start. `username`, not `user`: a reserved word in PostgreSQL.
///
/// - `warren_messages`: one row per kept envelope, keyed by its id; history reads the
///   `(route, id)` index (ids are UUIDv7, so id order is acceptance order).
/// - `warren_participants`: which routes are a user's conversations (every word of the route,
///   and whoever published to it).
/// - `warren_routes`: each route's newest message, for the conversation list's order.
/// - `warren_reads`: each user's read marker per route (an envelope id; it only moves forward).
enum StoreSchema {
    static let version = 1

    static func statements(dialect: SQLDialect) -> [String] {
        let integer = dialect == .postgres ? "BIGINT" : "INTEGER"
        // Ids compare byte by byte (PostgreSQL's default collation may skip the hyphens).
        let idType = dialect == .postgres ? "TEXT COLLATE \"C\"" : "TEXT"
        return [
            """
            CREATE TABLE IF NOT EXISTS warren_messages (id \(idType) PRIMARY KEY, route TEXT NOT NULL, sender TEXT NOT NULL,
              type TEXT NOT NULL, ts \(integer) NOT NULL, envelope TEXT NOT NULL)
            """,
            "CREATE INDEX IF NOT EXISTS warren_messages_route_id ON warren_messages (route, id)",
            "CREATE INDEX IF NOT EXISTS warren_messages_ts ON warren_messages (ts)",
            """
            CREATE TABLE IF NOT EXISTS warren_participants (username TEXT NOT NULL, route TEXT NOT NULL,
              PRIMARY KEY (username, route))
            """,
            "CREATE TABLE IF NOT EXISTS warren_routes (route TEXT PRIMARY KEY, last_id \(idType) NOT NULL)",
            """
            CREATE TABLE IF NOT EXISTS warren_reads (username TEXT NOT NULL, route TEXT NOT NULL, id \(idType) NOT NULL,
              PRIMARY KEY (username, route))
            """,
            "CREATE TABLE IF NOT EXISTS warren_schema (version \(integer) NOT NULL)",
            "INSERT INTO warren_schema (version) SELECT \(version) WHERE NOT EXISTS (SELECT 1 FROM warren_schema)",
        ]
    }
}
