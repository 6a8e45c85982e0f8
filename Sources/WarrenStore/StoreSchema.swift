import WarrenCore

/// The store's tables (docs/protocol.md), created or migrated at start. `username`, not `user`: a
/// reserved word in PostgreSQL.
///
/// - `warren_messages`: one row per kept envelope, keyed by its id; history reads the
///   `(route, sort_key)` index (``SortKey``: time, then id).
/// - `warren_participants`: which routes are a user's conversations (every word of the route,
///   and whoever published to it).
/// - `warren_routes`: each route's newest message and its key, for the conversation list's order.
/// - `warren_reads`: each user's read marker per route (an envelope id and its key; it only
///   moves forward).
/// - `warren_fences`: the fences the store's writers have committed, which a recovery waits
///   for (``StoreFence``), kept an hour.
/// - `warren_store_bindings`: the patterns each store queue was last bound with, so that one
///   dropped from `store.patterns`, or a queue `store.queue` no longer names, is unbound at the
///   next start.
///
/// Version 1 ordered everything by envelope id; version 2 by `sort_key`, which version 1's
/// rows are given when the store is opened by a Warren that knows version 2.
enum StoreSchema {
    static let version: Int64 = 2
    /// PostgreSQL's advisory lock for a migration (any constant of Warren's own).
    static let lockKey: Int64 = 0x5741_5252_454E // "WARREN"

    /// The tables as this version has them (nothing happens to those already there).
    static func tables(dialect: SQLDialect) -> [String] {
        let integer = dialect == .postgres ? "BIGINT" : "INTEGER"
        let key = dialect.keyType
        return [
            """
            CREATE TABLE IF NOT EXISTS warren_messages (id \(key) PRIMARY KEY, route TEXT NOT NULL, sender TEXT NOT NULL,
              type TEXT NOT NULL, ts \(integer) NOT NULL, envelope TEXT NOT NULL, sort_key \(key) NOT NULL)
            """,
            """
            CREATE TABLE IF NOT EXISTS warren_participants (username TEXT NOT NULL, route TEXT NOT NULL,
              PRIMARY KEY (username, route))
            """,
            "CREATE TABLE IF NOT EXISTS warren_routes (route TEXT PRIMARY KEY, last_id \(key) NOT NULL, last_key \(key) NOT NULL)",
            """
            CREATE TABLE IF NOT EXISTS warren_reads (username TEXT NOT NULL, route TEXT NOT NULL, id \(key) NOT NULL,
              sort_key \(key) NOT NULL, PRIMARY KEY (username, route))
            """,
            // Which patterns the store queues are bound with (``ConversationStore/boundPatterns()``).
            // Added to version 2 without a version change: an earlier Warren ignores the table.
            """
            CREATE TABLE IF NOT EXISTS warren_store_bindings (queue TEXT NOT NULL, pattern TEXT NOT NULL,
              PRIMARY KEY (queue, pattern))
            """,
            // The fences recoveries wait for (``StoreFence``): a few rows, pruned after an hour.
            // Added to version 2 without a version change, as the bindings were.
            "CREATE TABLE IF NOT EXISTS warren_fences (id \(key) PRIMARY KEY, at \(integer) NOT NULL)",
            "CREATE TABLE IF NOT EXISTS warren_schema (version \(integer) NOT NULL)",
            "INSERT INTO warren_schema (version) SELECT \(version) WHERE NOT EXISTS (SELECT 1 FROM warren_schema)",
        ]
    }

    /// Version 1 → 2: every row gets its key. A row whose id is no believable UUIDv7 is placed
    /// at its `ts` (the time the store took it is not known), at most `now`; a marker on an id
    /// that is neither kept nor a believable UUIDv7 stands before everything.
    static func upgradeToVersion2(dialect: SQLDialect, now: Int64) -> [(sql: String, binds: [SQLValue])] {
        let key = dialect.keyType
        let idTime = "substr(id, 1, 8) || substr(id, 10, 4)"
        let believable = "substr(id, 15, 1) = '7' AND \(idTime) <= \(dialect.p(1))"
        let latest: [SQLValue] = [.text(SortKey.prefix(now + SortKey.tolerance))]
        let clampedTS = "\(dialect.greatest)(0, \(dialect.least)(ts, \(dialect.p(2))))"
        return [
            ("ALTER TABLE warren_messages ADD COLUMN sort_key \(key) NOT NULL DEFAULT ''", []),
            ("UPDATE warren_messages SET sort_key = CASE WHEN \(believable) THEN \(idTime) || id ELSE \(dialect.hex12(clampedTS)) || id END",
             latest + [.integer(now)]),
            ("ALTER TABLE warren_routes ADD COLUMN last_key \(key) NOT NULL DEFAULT ''", []),
            ("""
             UPDATE warren_routes SET last_key = COALESCE((SELECT max(m.sort_key) FROM warren_messages m
               WHERE m.route = warren_routes.route), '')
             """, []),
            ("UPDATE warren_routes SET last_id = substr(last_key, 13) WHERE last_key <> ''", []),
            ("ALTER TABLE warren_reads ADD COLUMN sort_key \(key) NOT NULL DEFAULT ''", []),
            ("""
             UPDATE warren_reads SET sort_key = COALESCE((SELECT m.sort_key FROM warren_messages m WHERE m.id = warren_reads.id),
               CASE WHEN \(believable) THEN \(idTime) || id ELSE '' END)
             """, latest),
            ("DROP INDEX IF EXISTS warren_messages_route_id", []),
            ("DROP INDEX IF EXISTS warren_messages_ts", []),
        ] + (dialect == .postgres ? keysForEarlierWriters.map { ($0, []) } : [])
    }

    /// During a rolling upgrade, nodes of version 1 still write to a PostgreSQL store that is at
    /// version 2, without keys: their rows would stand before everything, for good. A trigger
    /// gives such a row the key this version's writer would have (its UUIDv7's time, else the
    /// database's clock). (SQLite is one node's file: nothing older writes to it meanwhile.)
    static let keysForEarlierWriters = [
        """
        CREATE OR REPLACE FUNCTION warren_sort_key() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
          now_ms BIGINT := (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT;
          id_time TEXT := substr(NEW.id, 1, 8) || substr(NEW.id, 10, 4);
        BEGIN
          IF NEW.sort_key = '' THEN
            IF substr(NEW.id, 15, 1) = '7' AND id_time <= lpad(to_hex(now_ms + \(SortKey.tolerance)), 12, '0') THEN
              NEW.sort_key := id_time || NEW.id;
            ELSE
              NEW.sort_key := lpad(to_hex(now_ms), 12, '0') || NEW.id;
            END IF;
          END IF;
          RETURN NEW;
        END $$
        """,
        "CREATE TRIGGER warren_sort_key BEFORE INSERT ON warren_messages FOR EACH ROW EXECUTE FUNCTION warren_sort_key()",
    ]

    /// Once every table has this version's columns: the indexes, and the version.
    static let finish = [
        "CREATE INDEX IF NOT EXISTS warren_messages_route_key ON warren_messages (route, sort_key)",
        "CREATE INDEX IF NOT EXISTS warren_messages_key ON warren_messages (sort_key)",
        "UPDATE warren_schema SET version = \(version)",
    ]
}
