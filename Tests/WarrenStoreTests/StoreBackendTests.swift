import Foundation
import Logging
import PostgresNIO
import Testing
import TestSupport
import WarrenCore
@testable import WarrenStore

/// The store against both real databases: SQLite in a new temporary file, PostgreSQL (the
/// private cluster of `scripts/postgres.sh`, or `WARREN_TEST_POSTGRES_URL`) in a new database,
/// for each test.
@Suite("Conversation store backends", .serialized)
struct StoreBackendTests {
    static let postgresURL = ProcessInfo.processInfo.environment["WARREN_TEST_POSTGRES_URL"]
        ?? "postgres://warren@127.0.0.1:15432/warren?sslmode=disable"

    /// `migrated: false` leaves the new database empty (for a test that builds an older schema first).
    static func withStore(_ backend: Backend, migrated: Bool = true, _ body: (SQLConversationStore) async throws -> Void) async throws {
        let logger = Logger(label: "test")
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let store: SQLConversationStore
        var cleanup: @Sendable () async throws -> Void
        switch backend {
        case .sqlite:
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("warren-store-\(suffix).sqlite").path
            store = SQLConversationStore(database: try await SQLiteDatabase.open(path: path, logger: logger))
            cleanup = { for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + s) } }
        case .postgres:
            let name = "warren_test_\(suffix)"
            let admin = try await PostgresDatabase.open(url: postgresURL, logger: logger)
            _ = try await admin.read { session in try await session.query("CREATE DATABASE \(name)") }
            var parts = URLComponents(string: postgresURL)!
            parts.path = "/\(name)"
            store = SQLConversationStore(database: try await PostgresDatabase.open(url: parts.string!, logger: logger))
            cleanup = {
                _ = try await admin.read { session in try await session.query("DROP DATABASE \(name) WITH (FORCE)") }
                await admin.close()
            }
        }
        if migrated {
            try await store.migrate()
            try await store.migrate() // idempotent: a restart migrates again
        }
        do { try await body(store) } catch {
            await store.close()
            try await cleanup()
            throw error
        }
        await store.close()
        try await cleanup()
    }


    static func message(_ route: String, from: String, type: String = "text", at ms: Int64 = 1_700_000_000_000) -> StoredMessage {
        // A generator per message: a shared one is monotonic, and would go on from the latest
        // time any test asked for.
        let id = UUIDv7Generator().next(nowMilliseconds: UInt64(ms))
        return stored(id, route, from: from, type: type, ts: ms, storedAt: ms)
    }

    /// A message kept at `storedAt` under an id of any kind, claiming the time `ts`.
    static func stored(_ id: String, _ route: String, from: String, type: String = "text", ts: Int64, storedAt: Int64) -> StoredMessage {
        StoredMessage(id: id, route: route, sender: from, type: type, ts: ts,
                      envelope: #"{"v":1,"id":"\#(id)","route":"\#(route)","type":"\#(type)","from":"\#(from)","body":"x"}"#,
                      sortKey: SortKey.of(id: id, storedAt: storedAt))
    }

    @Test(arguments: Backend.allCases) func historyPagesOldestFirstAndAWriteTwiceKeepsOnce(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let messages = (0..<7).map { Self.message("alice.bob", from: $0 % 2 == 0 ? "alice" : "bob", at: 1_700_000_000_000 + Int64($0)) }
            try await store.write(Array(messages[0..<4]))
            try await store.write(Array(messages[2..<7])) // a redelivered overlap
            let newest = try #require(try await store.history(route: "alice.bob", before: nil, limit: 3))
            #expect(newest.messages.map(\.id) == messages[4..<7].map(\.id))
            #expect(newest.more)
            let older = try #require(try await store.history(route: "alice.bob", before: newest.messages[0].id, limit: 3))
            #expect(older.messages.map(\.id) == messages[1..<4].map(\.id))
            let oldest = try #require(try await store.history(route: "alice.bob", before: older.messages[0].id, limit: 3))
            #expect(oldest.messages.map(\.id) == [messages[0].id])
            #expect(!oldest.more)
            #expect(try await store.history(route: "alice.carol", before: nil, limit: 50)?.messages.isEmpty == true)
        }
    }

    @Test(arguments: Backend.allCases) func conversationsCountUnreadAfterTheMarkerAndMarkersNeverMoveBack(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let a1 = Self.message("alice.bob", from: "bob", at: 1_700_000_000_001)
            let a2 = Self.message("alice.bob", from: "alice", at: 1_700_000_000_002)
            let a3 = Self.message("alice.bob", from: "bob", at: 1_700_000_000_003)
            let notice = Self.message("alice.bob", from: "bob", type: "notice", at: 1_700_000_000_004)
            let g1 = Self.message("group.g7", from: "alice", at: 1_700_000_000_005)
            let other = Self.message("bob.carol", from: "carol", at: 1_700_000_000_006)
            try await store.write([a1, a2, a3, notice, g1, other])
            let uncounted = ["notice"]
            var list = try await store.conversations(user: "alice", uncountedTypes: uncounted, limit: 50)
            #expect(list.map(\.route) == ["group.g7", "alice.bob"], "newest activity first; a group the user posted in counts")
            #expect(list.first { $0.route == "alice.bob" }?.unread == 2, "bob's two texts; not alice's own, not the notice")
            #expect(list.first { $0.route == "alice.bob" }?.last.id == notice.id)
            #expect(list.first { $0.route == "group.g7" }?.unread == 0)

            #expect(try await store.markRead(user: "alice", route: "alice.bob", id: a1.id) == a1.id)
            list = try await store.conversations(user: "alice", uncountedTypes: uncounted, limit: 50)
            #expect(list.first { $0.route == "alice.bob" }?.unread == 1)
            #expect(list.first { $0.route == "alice.bob" }?.read == a1.id)
            #expect(try await store.markRead(user: "alice", route: "alice.bob", id: a3.id) == a3.id)
            #expect(try await store.markRead(user: "alice", route: "alice.bob", id: a2.id) == a3.id, "never back")
            list = try await store.conversations(user: "alice", uncountedTypes: uncounted, limit: 50)
            #expect(list.first { $0.route == "alice.bob" }?.unread == 0)
            #expect(try await store.conversations(user: "carol", uncountedTypes: [], limit: 50).map(\.route) == ["bob.carol"])
        }
    }

    /// What PostgreSQL cannot hold (a NUL in text) is refused as data — no retry changes it —
    /// not thrown as an outage would be, so the writer sets that message aside and keeps the
    /// rest; the batch is rolled back whole, and the store goes on taking other writes.
    @Test func postgresRefusesANulAsDataAndTakesTheNextWrite() async throws {
        try await Self.withStore(.postgres) { store in
            let good = Self.message("alice.bob", from: "alice")
            var bad = Self.message("alice.bob", from: "bob", at: 1_700_000_000_001)
            bad.sender = "b\u{0}ob"
            await #expect(throws: StoreRefusedData.self) { try await store.write([good, bad]) }
            #expect(try await store.history(route: "alice.bob", before: nil, limit: 10)?.messages.isEmpty == true,
                    "the refused batch left nothing")
            try await store.write([good])
            #expect(try await store.history(route: "alice.bob", before: nil, limit: 10)?.messages.map(\.id) == [good.id])
        }
    }

    /// A PostgreSQL database in another encoding than UTF-8 could not hold every message (an
    /// emoji in LATIN1 is refused, and a refused message is given up): refused at start, saying why.
    @Test func aPostgresDatabaseNotInUTF8IsRefusedAtStart() async throws {
        let logger = Logger(label: "test")
        let name = "warren_test_latin1_\(UUID().uuidString.prefix(8).lowercased())"
        let admin = try await PostgresDatabase.open(url: Self.postgresURL, logger: logger)
        _ = try await admin.read { session in
            try await session.query("CREATE DATABASE \(name) ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
        }
        var parts = URLComponents(string: Self.postgresURL)!
        parts.path = "/\(name)"
        let store = SQLConversationStore(database: try await PostgresDatabase.open(url: parts.string!, logger: logger))
        var refusal = ""
        do { try await store.migrate() } catch { refusal = "\(error)" }
        #expect(refusal.contains("encoding is LATIN1"), "\(refusal)")
        await store.close()
        _ = try await admin.read { session in try await session.query("DROP DATABASE \(name) WITH (FORCE)") }
        await admin.close()
    }

    /// What opening PostgreSQL ended with, or "still waiting" after `bound` (the pool's leases
    /// wait for a connection however long: before 2026-11-29 these opens never ended).
    static func openOutcome(_ url: String, wait: Duration = .seconds(60), bound: Duration = .seconds(90)) async -> String {
        await withTaskGroup(of: String.self) { group in
            group.addTask {
                do {
                    let database = try await PostgresDatabase.open(url: url, logger: Logger(label: "test"), wait: wait)
                    await database.close()
                    return "opened"
                } catch { return "\(error)" }
            }
            group.addTask {
                try? await Task.sleep(for: bound)
                return "still waiting"
            }
            let first = await group.next()!
            group.cancelAll()
            return first
        }
    }

    /// A node started with a user or database the server does not know, or TLS it cannot give,
    /// stops at start saying what the server said (README: "Warren exits at start if the database
    /// cannot be opened"); before, it waited for a connection for good, serving nothing.
    @Test func aLoginPostgresRefusesFailsAtOnceSayingWhy() async throws {
        var noDatabase = URLComponents(string: Self.postgresURL)!
        noDatabase.path = "/warren_test_missing_\(UUID().uuidString.prefix(8).lowercased())"
        let missing = await Self.openOutcome(noDatabase.string!)
        #expect(missing.contains("refused the login") && missing.contains("does not exist") && missing.contains("3D000"), "\(missing)")
        var noRole = URLComponents(string: Self.postgresURL)!
        noRole.user = "warren_no_such_role"
        let role = await Self.openOutcome(noRole.string!)
        #expect(role.contains("refused the login") && role.contains("warren_no_such_role") && role.contains("28000"), "\(role)")
        #expect(await Self.openOutcome(Self.postgresURL) == "opened")
    }

    /// A database that does not answer (nothing listens on the port) is tried again for the
    /// wait given, then opening fails naming it.
    @Test func aDatabaseThatDoesNotAnswerFailsAfterTheWait() async throws {
        let port = try freePort()
        let outcome = await Self.openOutcome("postgres://warren@127.0.0.1:\(port)/warren?sslmode=disable", wait: .seconds(2))
        #expect(outcome.contains("did not take a login within") && outcome.contains("127.0.0.1:\(port)"), "\(outcome)")
    }

    @Test(arguments: Backend.allCases) func pruneDeletesOnlyOldMessages(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let old = Self.message("alice.bob", from: "bob", at: 1_000)
            let recent = Self.message("alice.bob", from: "bob", at: 1_700_000_000_000)
            try await store.write([old, recent])
            #expect(try await store.prune(before: 1_600_000_000_000) == 1)
            #expect(try await store.history(route: "alice.bob", before: nil, limit: 50)?.messages.map(\.id) == [recent.id])
        }
    }

    /// What a recovery reads: a message's place whatever its route, and the messages after a
    /// key (and before another), newest first, of one route, of the routes under a prefix (the
    /// prefix itself and `prefix.…`, not `prefixy`), or of every route.
    @Test(arguments: Backend.allCases) func messagesAfterAKeyAreReadNewestFirstByRoute(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let base: Int64 = 1_700_000_000_000
            let routes = ["room", "room.a", "room.a.b", "roomy.a", "alice.bob", "room.a"]
            let messages = routes.enumerated().map { Self.message($1, from: "bob", at: base + Int64($0) * 10) }
            try await store.write(messages)
            let first = try #require(try await store.position(of: messages[0].id))
            #expect(first.route == "room" && first.sortKey == messages[0].sortKey)
            #expect(try await store.position(of: "0b6f7a52-3c7e-4d8a-9a51-7c2f0e6d1b23") == nil)
            func ids(_ filter: RouteFilter, below: String? = nil, limit: Int = 10) async throws -> [String] {
                try await store.messages(after: first.sortKey, below: below, routes: filter, limit: limit).map(\.id)
            }
            #expect(try await ids(.route("room.a")) == [messages[5].id, messages[1].id])
            #expect(try await ids(.under("room")) == [messages[5].id, messages[2].id, messages[1].id])
            #expect(try await ids(.any) == messages.dropFirst().reversed().map(\.id))
            #expect(try await ids(.any, limit: 2) == [messages[5].id, messages[4].id])
            #expect(try await ids(.any, below: messages[4].sortKey) == [messages[3].id, messages[2].id, messages[1].id])
        }
    }

    /// Fences are recorded with their batch, once however often it is written, alone too, and
    /// pruned after an hour.
    @Test(arguments: Backend.allCases) func fencesAreRecordedWithTheirBatch(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let fence = UUIDv7Generator().next(nowMilliseconds: 1)
            #expect(try await store.fenceWritten(fence) == false)
            try await store.write([Self.message("room.a", from: "bob")], fences: [fence])
            try await store.write([], fences: [fence])
            #expect(try await store.fenceWritten(fence))
            _ = try await store.prune(before: 0)
            #expect(try await store.fenceWritten(fence), "recorded now: kept")
        }
    }

    /// The store queue's bindings as last recorded, per queue, replaced whole (none: forgotten);
    /// migrating again (the next start) keeps them.
    @Test(arguments: Backend.allCases) func theStoreQueuesBindingsAreRecordedPerQueue(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            #expect(try await store.boundPatterns().isEmpty)
            try await store.recordBoundPatterns(queue: "warren.store", ["#", "room.#", "#"])
            try await store.recordBoundPatterns(queue: "other.store", ["group.#"])
            #expect(try await store.boundPatterns() == ["warren.store": ["#", "room.#"], "other.store": ["group.#"]])
            try await store.recordBoundPatterns(queue: "warren.store", ["room.#"])
            try await store.recordBoundPatterns(queue: "other.store", [])
            try await store.migrate()
            #expect(try await store.boundPatterns() == ["warren.store": ["room.#"]])
        }
    }

    @Test(arguments: Backend.allCases) func aLargeBatchIsOneWriteInChunks(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let messages = (0..<1_000).map { Self.message("room.big", from: "u\($0 % 7)", at: 1_700_000_000_000 + Int64($0)) }
            try await store.write(messages)
            let page = try #require(try await store.history(route: "room.big", before: nil, limit: 200))
            #expect(page.messages.count == 200)
            #expect(page.messages.last?.id == messages.last?.id)
            #expect(page.more)
        }
    }

    /// An AMQP publisher may name any UUID as `message_id`. Ordered by id, a random version 4
    /// (here one that begins with `f`) would be the newest message of its conversation until
    /// the 26th century, and a read marker set on it would hide everything after; a version 7
    /// from a clock a year ahead likewise for a year. Both are placed when they were stored.
    @Test(arguments: Backend.allCases) func messagesUnderIdsThatAreNotTimeOrderedArePlacedWhenStored(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let t: Int64 = 1_700_000_000_000
            let first = Self.message("alice.bob", from: "alice", at: t + 1)
            let random = Self.stored("f47ac10b-58cc-4372-a567-0e02b2c3d479", "alice.bob", from: "bob", ts: 1, storedAt: t + 2)
            // (From a generator of its own: the shared one would go on from that time.)
            let aheadID = UUIDv7Generator().next(nowMilliseconds: UInt64(t + 365 * 86_400_000))
            let ahead = Self.stored(aheadID, "alice.bob", from: "bob", ts: t + 365 * 86_400_000, storedAt: t + 3)
            let last = Self.message("alice.bob", from: "bob", at: t + 4)
            try await store.write([last, ahead])
            try await store.write([first, random])
            let order = [first.id, random.id, ahead.id, last.id]
            #expect(try await store.history(route: "alice.bob", before: nil, limit: 50)?.messages.map(\.id) == order)
            var list = try await store.conversations(user: "alice", uncountedTypes: [], limit: 50)
            #expect(list.first?.last.id == last.id, "the newest is the one stored last")
            #expect(list.first?.unread == 3)

            #expect(try await store.markRead(user: "alice", route: "alice.bob", id: random.id) == random.id)
            list = try await store.conversations(user: "alice", uncountedTypes: [], limit: 50)
            #expect(list.first?.unread == 2, "a marker on the random id counts what came after it")
            #expect(try await store.history(route: "alice.bob", before: random.id, limit: 50)?.messages.map(\.id) == [first.id])
            #expect(try await store.history(route: "alice.bob", before: ahead.id, limit: 50)?.messages.map(\.id) == Array(order[..<2]))
            #expect(try await store.markRead(user: "alice", route: "alice.bob", id: ahead.id) == ahead.id)
            #expect(try await store.conversations(user: "alice", uncountedTypes: [], limit: 50).first?.unread == 1)

            // An id that is neither kept in the route nor a UUIDv7 that places itself names nothing.
            let unknown = "00000000-0000-4000-8000-000000000000"
            #expect(try await store.markRead(user: "alice", route: "alice.bob", id: unknown) == nil)
            #expect(try await store.history(route: "alice.bob", before: unknown, limit: 50) == nil)
            #expect(try await store.markRead(user: "alice", route: "alice.carol", id: random.id) == nil, "kept, but in another route")
            // A UUIDv7 not (yet) kept places itself: a marker on a message the store has not written.
            let notYet = UUIDv7Generator().next(nowMilliseconds: UInt64(WallClock.milliseconds()))
            #expect(try await store.history(route: "alice.bob", before: notYet, limit: 50)?.messages.map(\.id) == order)
            #expect(try await store.markRead(user: "alice", route: "alice.bob", id: notYet) == notYet)
            #expect(try await store.conversations(user: "alice", uncountedTypes: [], limit: 50).first?.unread == 0)
        }
    }

    /// A store written by a Warren of schema version 1 (everything ordered by id) is brought to
    /// version 2 when opened: its Warren ids keep their order, a row under a random id is placed
    /// at its `ts`, markers and the conversation list follow, and new writes carry on.
    @Test(arguments: Backend.allCases) func aVersion1StoreIsMigratedKeepingItsOrderMarkersAndConversations(_ backend: Backend) async throws {
        try await Self.withStore(backend, migrated: false) { store in
            let t: Int64 = 1_700_000_000_000
            let m1 = Self.message("alice.bob", from: "bob", at: t + 1)
            let m2 = Self.stored("f47ac10b-58cc-4372-a567-0e02b2c3d479", "alice.bob", from: "bob", ts: t + 2, storedAt: t + 2)
            let m3 = Self.message("alice.bob", from: "bob", at: t + 3)
            let c1 = Self.message("bob.carol", from: "carol", at: t + 5)
            let id = store.dialect == .postgres ? "TEXT COLLATE \"C\"" : "TEXT"
            let integer = store.dialect == .postgres ? "BIGINT" : "INTEGER"
            let p = store.dialect.p
            try await store.database.transaction { session in
                for sql in [
                    """
                    CREATE TABLE warren_messages (id \(id) PRIMARY KEY, route TEXT NOT NULL, sender TEXT NOT NULL,
                      type TEXT NOT NULL, ts \(integer) NOT NULL, envelope TEXT NOT NULL)
                    """,
                    "CREATE INDEX warren_messages_route_id ON warren_messages (route, id)",
                    "CREATE INDEX warren_messages_ts ON warren_messages (ts)",
                    "CREATE TABLE warren_participants (username TEXT NOT NULL, route TEXT NOT NULL, PRIMARY KEY (username, route))",
                    "CREATE TABLE warren_routes (route TEXT PRIMARY KEY, last_id \(id) NOT NULL)",
                    "CREATE TABLE warren_reads (username TEXT NOT NULL, route TEXT NOT NULL, id \(id) NOT NULL, PRIMARY KEY (username, route))",
                    "CREATE TABLE warren_schema (version \(integer) NOT NULL)",
                    "INSERT INTO warren_schema (version) VALUES (1)",
                    // As version 1 kept them: the route's newest by id is the random one.
                    "INSERT INTO warren_routes (route, last_id) VALUES ('alice.bob', '\(m2.id)'), ('bob.carol', '\(c1.id)')",
                    """
                    INSERT INTO warren_participants (username, route) VALUES ('alice', 'alice.bob'), ('bob', 'alice.bob'),
                      ('bob', 'bob.carol'), ('carol', 'bob.carol')
                    """,
                    "INSERT INTO warren_reads (username, route, id) VALUES ('alice', 'alice.bob', '\(m1.id)'), "
                        + "('bob', 'bob.carol', '00000000-0000-4000-8000-000000000000')",
                ] { _ = try await session.query(sql) }
                for m in [m1, m2, m3, c1] {
                    _ = try await session.query("INSERT INTO warren_messages (id, route, sender, type, ts, envelope) "
                                                + "VALUES (\(p(1)), \(p(2)), \(p(3)), \(p(4)), \(p(5)), \(p(6)))",
                                                [.text(m.id), .text(m.route), .text(m.sender), .text(m.type), .integer(m.ts), .text(m.envelope)])
                }
            }
            try await store.migrate()
            try await store.migrate()
            let version = try await store.database.read { session in try await session.query("SELECT version FROM warren_schema") }
            #expect(version.map { $0["version"]?.integer } == [StoreSchema.version])

            #expect(try await store.history(route: "alice.bob", before: nil, limit: 50)?.messages.map(\.id) == [m1.id, m2.id, m3.id])
            #expect(try await store.history(route: "alice.bob", before: nil, limit: 50)?.messages.map(\.sortKey)
                    == [m1.sortKey, m2.sortKey, m3.sortKey], "the keys a version-2 store would have written")
            var alice = try await store.conversations(user: "alice", uncountedTypes: [], limit: 50)
            #expect(alice.first?.last.id == m3.id)
            #expect(alice.first?.unread == 2 && alice.first?.read == m1.id)
            let bob = try await store.conversations(user: "bob", uncountedTypes: [], limit: 50)
            #expect(bob.map(\.route) == ["bob.carol", "alice.bob"])
            #expect(bob.first?.unread == 1, "a marker on an id that places nowhere stands before everything")

            #expect(try await store.markRead(user: "alice", route: "alice.bob", id: m2.id) == m2.id)
            #expect(try await store.markRead(user: "alice", route: "alice.bob", id: m1.id) == m2.id, "never back")
            let m4 = Self.message("alice.bob", from: "bob", at: t + 6)
            try await store.write([m4])
            alice = try await store.conversations(user: "alice", uncountedTypes: [], limit: 50)
            #expect(alice.first?.last.id == m4.id && alice.first?.unread == 2)
            #expect(try await store.prune(before: t + 3) == 2)

            // A node of version 1 still running (a rolling upgrade) writes as it did, without a
            // key. On PostgreSQL, which several nodes share, its row is placed all the same.
            guard store.dialect == .postgres else { return }
            let late = Self.message("alice.bob", from: "bob", at: WallClock.milliseconds())
            let random = "f" + UUID().uuidString.lowercased().dropFirst()
            try await store.database.transaction { session in
                for (id, ts) in [(late.id, late.ts), (random, Int64(1))] {
                    _ = try await session.query("INSERT INTO warren_messages (id, route, sender, type, ts, envelope) "
                                                + "VALUES ($1, 'alice.bob', 'bob', 'text', $2, '{}')", [.text(id), .integer(ts)])
                }
            }
            let keys = try await store.history(route: "alice.bob", before: nil, limit: 50)?.messages.map(\.sortKey) ?? []
            #expect(keys.suffix(2).first == late.sortKey, "a Warren id at its own time")
            #expect(keys.last.map { SortKey.id(of: $0) == random && $0 > late.sortKey } == true, "a random id when written")
        }
    }

    /// A store written by a newer Warren is refused, not rewritten.
    @Test(arguments: Backend.allCases) func aStoreOfANewerSchemaIsRefused(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            try await store.database.transaction { session in
                _ = try await session.query("UPDATE warren_schema SET version = \(StoreSchema.version + 1)")
            }
            await #expect(throws: StoreDataError.self) { try await store.migrate() }
        }
    }
}
