import AMQPClient
import Foundation
import Logging
import Testing
import TestSupport
import WarrenCore
@testable import WarrenStore

/// The store across failures (docs/protocol.md, issue 14): a node killed while it writes, and the
/// database gone for 30 s. Every acknowledged publish ends up stored, once.
@Suite("Conversation store under failures", .serialized)
struct StoreFailureTests {
    /// Publishes `count` messages on `route` over `socket`, at most `window` awaiting their
    /// puback; returns the acknowledged ids. `halfway` runs once, after half are acknowledged.
    static func publish(_ count: Int, route: String, over socket: TestSocket, window: Int = 100,
                        halfway: (() async throws -> Void)? = nil) async throws -> [String] {
        var ids: [String] = []
        var sent = 0
        var ranHalfway = false
        while ids.count < count {
            while sent < count, sent - ids.count < window {
                try await socket.send(#"{"op":"pub","route":"\#(route)","body":\#(sent)}"#)
                sent += 1
            }
            let ack = try await socket.next(op: "puback")
            ids.append(try #require(ack["id"]?.stringValue))
            if !ranHalfway, ids.count >= count / 2, let halfway {
                ranHalfway = true
                try await halfway()
            }
        }
        return ids
    }

    /// The ids kept for `route`, read from the database itself.
    static func storedIDs(_ url: String, route: String) async throws -> [String] {
        let database = try await PostgresDatabase.open(url: url, logger: Logger(label: "test"))
        defer { Task { await database.close() } }
        return try await database.read { session in
            try await session.query("SELECT id FROM warren_messages WHERE route = $1", [.text(route)]).compactMap { $0["id"]?.string }
        }
    }

    /// Waits until the database holds `expected` rows for the route (or the deadline passes).
    static func awaitStoredCount(_ url: String, route: String, expected: Int, within: Duration = .seconds(90)) async throws -> [String] {
        let deadline = ContinuousClock.now + within
        var ids: [String] = []
        while ContinuousClock.now < deadline {
            ids = (try? await storedIDs(url, route: route)) ?? []
            if ids.count >= expected { return ids }
            try await Task.sleep(for: .milliseconds(200))
        }
        return ids
    }

    static func readiness(_ node: WarrenInstance) async -> Int? {
        try? await HTTPTestClient.request(.GET, port: node.port, "/readyz").status
    }

    static func awaitReadiness(_ node: WarrenInstance, _ status: Int, within: Duration = .seconds(60)) async throws -> Bool {
        let deadline = ContinuousClock.now + within
        while ContinuousClock.now < deadline {
            if await readiness(node) == status { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// Closes the test's socket, stops its nodes, drops its database and deletes its store queue.
    static func tearDown(_ socket: TestSocket, nodes: [WarrenInstance], remove: () async -> Void, queue: String) async throws {
        _ = await socket.close()
        for node in nodes { await node.stop() }
        await remove()
        try await StoreTests.deleteQueue(queue)
    }

    static func postgres(_ command: String) async throws {
        let status = try await TestEnvironment.spawnAndWait(TestEnvironment.packageRoot.appendingPathComponent("scripts/postgres.sh"), [command])
        guard status == 0 else { throw SocketError(description: "scripts/postgres.sh \(command) exited \(status)") }
    }

    @Test func twoNodesOnOneDatabaseStoreEachMessageOnceThoughOneIsKilledWhileWriting() async throws {
        let (url, remove) = try await StoreTests.makeDatabase(.postgres)
        let queue = "test.store.\(UUID().uuidString.prefix(8).lowercased())"
        let env = ["WARREN_STORE_ENABLED": "true", "WARREN_STORE_URL": url, "WARREN_STORE_QUEUE": queue,
                   "WARREN_STORE_BATCH_SIZE": "200"]
        let survivor = try await WarrenInstance.start(env)
        var victim = try await WarrenInstance.start(env, exchange: survivor.exchange)
        let route = "room.kill\(UUID().uuidString.prefix(6).lowercased())"
        let socket = try await survivor.socket(uniqueUser("alice"))
        let ids = try await Self.publish(10_000, route: route, over: socket) {
            // Both nodes are writing now; one dies without a word (its unacked deliveries go back).
            victim.process.process.signal(SIGKILL)
            _ = await victim.process.waitForExit()
        }
        victim = try await WarrenInstance.start(env, exchange: survivor.exchange)
        let stored = try await Self.awaitStoredCount(url, route: route, expected: ids.count)
        #expect(stored.count == ids.count, "every acknowledged publish stored")
        #expect(Set(stored) == Set(ids), "exactly the acknowledged ones")
        #expect(Set(stored).count == stored.count, "each once")
        #expect(victim.process.log.contains("warren is ready"))
        try await Self.tearDown(socket, nodes: [victim, survivor], remove: remove, queue: queue)
    }

    /// An operator deletes the store queue: the broker cancels the writer's consumer, and the
    /// node declares, binds and consumes `warren.store` again, so what is published afterwards
    /// is stored.
    @Test func aDeletedStoreQueueIsSetUpAgain() async throws {
        let (url, remove) = try await StoreTests.makeDatabase(.postgres)
        let queue = "test.store.\(UUID().uuidString.prefix(8).lowercased())"
        let node = try await WarrenInstance.start(["WARREN_STORE_ENABLED": "true", "WARREN_STORE_URL": url, "WARREN_STORE_QUEUE": queue])
        let route = "room.deleted\(UUID().uuidString.prefix(6).lowercased())"
        let socket = try await node.socket(uniqueUser("alice"))
        var ids = try await Self.publish(20, route: route, over: socket)
        #expect(try await Self.awaitStoredCount(url, route: route, expected: 20).count == 20)

        _ = try Broker.ctl("delete_queue", queue)
        #expect(await node.process.waitForLog("the store's consumer set up again"))
        ids += try await Self.publish(20, route: route, over: socket)
        let stored = try await Self.awaitStoredCount(url, route: route, expected: 40)
        #expect(Set(stored) == Set(ids), "what was published after the queue came back is stored")
        try await Self.tearDown(socket, nodes: [node], remove: remove, queue: queue)
    }

    /// The database is down longer than the broker's `consumer_timeout` (shortened here to 1 s,
    /// checked every 200 ms): RabbitMQ closes the writer's channel with a 406 for the deliveries
    /// it holds unacked. The writer consumes again on a new channel, and once the database is
    /// back everything published is stored. (This test alone runs meanwhile; no other consumer
    /// of the node acks by hand.)
    @Test func theWriterConsumesOnANewChannelAfterTheBrokerClosedItsOwn() async throws {
        let (url, remove) = try await StoreTests.makeDatabase(.postgres)
        let queue = "test.store.\(UUID().uuidString.prefix(8).lowercased())"
        let route = "room.timeout\(UUID().uuidString.prefix(6).lowercased())"
        var ids: [String] = []
        let (node, socket) = try await Broker.withConsumerTimeout(milliseconds: 1000) {
            let node = try await WarrenInstance.start(["WARREN_STORE_ENABLED": "true", "WARREN_STORE_URL": url, "WARREN_STORE_QUEUE": queue])
            let socket = try await node.socket(uniqueUser("alice"))
            ids = try await Self.publish(20, route: route, over: socket)
            #expect(try await Self.awaitStoredCount(url, route: route, expected: 20).count == 20)
            try await Self.postgres("stop")
            do {
                ids += try await Self.publish(20, route: route, over: socket)
                #expect(await node.process.waitForLog("the broker closed the channel of the store's consumer"))
            } catch {
                try? await Self.postgres("start")
                throw error
            }
            return (node, socket)
        }
        try await Self.postgres("start")
        #expect(await node.process.waitForLog("the store's consumer set up again"))
        let stored = try await Self.awaitStoredCount(url, route: route, expected: 40)
        #expect(Set(stored) == Set(ids), "everything published is stored once the database is back")
        try await Self.tearDown(socket, nodes: [node], remove: remove, queue: queue)
    }

    @Test func aDatabaseOutageOf30SecondsLosesNothingAndReadinessFollowsIt() async throws {
        let (url, remove) = try await StoreTests.makeDatabase(.postgres)
        let queue = "test.store.\(UUID().uuidString.prefix(8).lowercased())"
        let node = try await WarrenInstance.start(["WARREN_STORE_ENABLED": "true", "WARREN_STORE_URL": url, "WARREN_STORE_QUEUE": queue])
        let route = "room.outage\(UUID().uuidString.prefix(6).lowercased())"
        let socket = try await node.socket(uniqueUser("alice"))
        var ids = try await Self.publish(200, route: route, over: socket)
        #expect(try await Self.awaitStoredCount(url, route: route, expected: 200).count == 200)
        #expect(await Self.readiness(node) == 200)

        try await Self.postgres("stop")
        let stopped = ContinuousClock.now
        do {
            ids += try await Self.publish(500, route: route, over: socket)
            #expect(try await Self.awaitReadiness(node, 503), "/readyz is 503 while the store does not answer")
            let history = try await HTTPTestClient.request(.GET, port: node.port, "/v1/history?user=\(socket.name)&route=\(route)")
            #expect(history.status == 503)
            // The database stays away for 30 s in all; publishing goes on meanwhile.
            ids += try await Self.publish(300, route: route, over: socket)
            try await Task.sleep(until: stopped + .seconds(30), clock: .continuous)
        } catch {
            try await Self.postgres("start")
            throw error
        }
        try await Self.postgres("start")
        #expect(try await Self.awaitReadiness(node, 200), "ready again once the database answers")
        let stored = try await Self.awaitStoredCount(url, route: route, expected: ids.count)
        #expect(stored.count == ids.count, "every message published during the outage stored after it")
        #expect(Set(stored) == Set(ids))
        try await Self.tearDown(socket, nodes: [node], remove: remove, queue: queue)
    }
}
