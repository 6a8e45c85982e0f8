import Foundation
import Logging
import PostgresNIO
import Testing
import WarrenCore
@testable import WarrenStore

/// The store against both real databases: SQLite in a new temporary file, PostgreSQL (the
/// private cluster of `scripts/postgres.sh`, or `WARREN_TEST_POSTGRES_URL`) in a new database,
/// for each test.
@Suite("Conversation store backends", .serialized)
struct StoreBackendTests {
    static let postgresURL = ProcessInfo.processInfo.environment["WARREN_TEST_POSTGRES_URL"]
        ?? "postgres://warren@127.0.0.1:15432/warren?sslmode=disable"

    static func withStore(_ backend: Backend, _ body: (SQLConversationStore) async throws -> Void) async throws {
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
        try await store.migrate()
        try await store.migrate() // idempotent: a restart migrates again
        do { try await body(store) } catch {
            await store.close()
            try await cleanup()
            throw error
        }
        await store.close()
        try await cleanup()
    }

    static let ids = UUIDv7Generator()

    static func message(_ route: String, from: String, type: String = "text", at ms: Int64 = 1_700_000_000_000) -> StoredMessage {
        let id = ids.next(nowMilliseconds: UInt64(ms))
        return StoredMessage(id: id, route: route, sender: from, type: type, ts: ms,
                             envelope: #"{"v":1,"id":"\#(id)","route":"\#(route)","type":"\#(type)","from":"\#(from)","body":"x"}"#)
    }

    @Test(arguments: Backend.allCases) func historyPagesOldestFirstAndAWriteTwiceKeepsOnce(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let messages = (0..<7).map { Self.message("alice.bob", from: $0 % 2 == 0 ? "alice" : "bob", at: 1_700_000_000_000 + Int64($0)) }
            try await store.write(Array(messages[0..<4]))
            try await store.write(Array(messages[2..<7])) // a redelivered overlap
            let newest = try await store.history(route: "alice.bob", before: nil, limit: 3)
            #expect(newest.messages.map(\.id) == messages[4..<7].map(\.id))
            #expect(newest.more)
            let older = try await store.history(route: "alice.bob", before: newest.messages[0].id, limit: 3)
            #expect(older.messages.map(\.id) == messages[1..<4].map(\.id))
            let oldest = try await store.history(route: "alice.bob", before: older.messages[0].id, limit: 3)
            #expect(oldest.messages.map(\.id) == [messages[0].id])
            #expect(!oldest.more)
            #expect(try await store.history(route: "alice.carol", before: nil, limit: 50).messages.isEmpty)
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

    @Test(arguments: Backend.allCases) func pruneDeletesOnlyOldMessages(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let old = Self.message("alice.bob", from: "bob", at: 1_000)
            let recent = Self.message("alice.bob", from: "bob", at: 1_700_000_000_000)
            try await store.write([old, recent])
            #expect(try await store.prune(before: 1_600_000_000_000) == 1)
            #expect(try await store.history(route: "alice.bob", before: nil, limit: 50).messages.map(\.id) == [recent.id])
        }
    }

    @Test(arguments: Backend.allCases) func aLargeBatchIsOneWriteInChunks(_ backend: Backend) async throws {
        try await Self.withStore(backend) { store in
            let messages = (0..<1_000).map { Self.message("room.big", from: "u\($0 % 7)", at: 1_700_000_000_000 + Int64($0)) }
            try await store.write(messages)
            let page = try await store.history(route: "room.big", before: nil, limit: 200)
            #expect(page.messages.count == 200)
            #expect(page.messages.last?.id == messages.last?.id)
            #expect(page.more)
        }
    }
}
