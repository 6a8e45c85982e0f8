import AMQPClient
import Foundation
import NIOCore
import Testing
import Logging
import WarrenCore
import TestSupport
@testable import WarrenStore

/// The conversation store end to end (docs/protocol.md): a Warren process with its own SQLite file and
/// store queue, real clients through every door.
@Suite("Conversation store", .serialized)
struct StoreTests {
    static let postgresURL = ProcessInfo.processInfo.environment["WARREN_TEST_POSTGRES_URL"]
        ?? "postgres://warren@127.0.0.1:15432/warren?sslmode=disable"

    /// A database of its own for one test: a new SQLite file, or a new PostgreSQL database on the
    /// private cluster (`scripts/postgres.sh`); its `store.url`, and how to remove it.
    static func makeDatabase(_ backend: StoreBackend) async throws -> (url: String, remove: @Sendable () async -> Void) {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        switch backend {
        case .sqlite:
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("warren-\(suffix).sqlite").path
            return ("sqlite://\(path)", { for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + s) } })
        case .postgres:
            let name = "warren_e2e_\(suffix)"
            let admin = try await PostgresDatabase.open(url: postgresURL, logger: Logger(label: "test"))
            _ = try await admin.read { session in try await session.query("CREATE DATABASE \(name)") }
            var parts = URLComponents(string: postgresURL)!
            parts.path = "/\(name)"
            return (parts.string!, {
                _ = try? await admin.read { session in try await session.query("DROP DATABASE \(name) WITH (FORCE)") }
                await admin.close()
            })
        }
    }

    static func deleteQueue(_ queue: String) async throws {
        let connection = try await AMQPConnection.connect(configuration: try AMQPConfiguration(url: WarrenInstance.brokerURL))
        let channel = try await connection.openChannel()
        _ = try? await channel.queueDelete(queue)
        await connection.close()
    }

    /// A node with the store on: its own database and queue (deleted afterwards).
    static func withStoreNode(_ backend: StoreBackend, _ body: (WarrenInstance) async throws -> Void) async throws {
        let (url, remove) = try await makeDatabase(backend)
        let queue = "test.store.\(UUID().uuidString.prefix(8).lowercased())"
        let node: WarrenInstance
        do {
            node = try await WarrenInstance.start(["WARREN_STORE_ENABLED": "true", "WARREN_STORE_URL": url, "WARREN_STORE_QUEUE": queue])
        } catch {
            await remove()
            throw error
        }
        do { try await body(node) } catch {
            await node.stop()
            await remove()
            try await deleteQueue(queue)
            throw error
        }
        await node.stop()
        await remove()
        try await deleteQueue(queue)
    }

    static func history(_ node: WarrenInstance, user: String, _ query: String) async throws -> HTTPTestClient.Response {
        try await HTTPTestClient.request(.GET, port: node.port, "/v1/history?user=\(user)&\(query)")
    }

    /// Waits until every id is in the route's history.
    static func awaitStored(_ node: WarrenInstance, user: String, route: String, ids: [String]) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let r = try await history(node, user: user, "route=\(route)&limit=200")
            let kept = Set(r.json?["messages"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? [])
            if ids.allSatisfy(kept.contains) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw SocketError(description: "\(ids) never all reached the store")
    }

    static func awaitStored(_ node: WarrenInstance, user: String, route: String, id: String) async throws {
        try await awaitStored(node, user: user, route: route, ids: [id])
    }

    /// The millisecond a UUIDv7 was made in.
    static func milliseconds(of id: String) -> UInt64 {
        UInt64(id.replacingOccurrences(of: "-", with: "").prefix(12), radix: 16) ?? 0
    }

    /// Returns once the wall clock is past the millisecond `id` was made in, so an id made from
    /// now on sorts after it whichever process makes it (ids order by their millisecond first).
    static func clockPast(_ id: String) async throws -> UInt64 {
        while true {
            let now = UInt64(Date().timeIntervalSince1970 * 1000)
            if now > milliseconds(of: id) { return now }
            try await Task.sleep(for: .milliseconds(1))
        }
    }

    @Test(arguments: StoreBackend.allCases) func everyDoorIsKeptOnceInOrderWithPagingAndNothingTransient(_ backend: StoreBackend) async throws {
        try await Self.withStoreNode(backend) { node in
            let alice = uniqueUser("alice"), bob = uniqueUser("bob")
            let route = [alice, bob].sorted().joined(separator: ".")
            let ws = try await node.socket(alice)
            var expected: [String] = []
            let first = try await ws.request(#"{"op":"pub","route":"\#(route)","body":"one","cid":"c1"}"#, expect: "puback")
            expected.append(try #require(first["id"]?.stringValue))
            // Neither kept: a transient envelope and a skipped type.
            _ = try await ws.request(#"{"op":"pub","route":"\#(route)","type":"text","transient":true,"body":"..."}"#, expect: "puback")
            _ = try await ws.request(#"{"op":"pub","route":"\#(route)","type":"typing","body":"..."}"#, expect: "puback")
            let viaHTTP = try await HTTPTestClient.request(.POST, port: node.port, "/v1/messages?user=\(bob)",
                                                           body: #"{"route":"\#(route)","body":"two"}"#)
            expected.append(try #require(viaHTTP.json?["id"]?.stringValue))
            // A plain AMQP publisher (a back end), with its own message id, made after bob's (ids order history).
            let amqpID = UUIDv7Generator().next(nowMilliseconds: try await Self.clockPast(expected[1]))
            let connection = try await AMQPConnection.connect(configuration: try AMQPConfiguration(url: WarrenInstance.brokerURL))
            let channel = try await connection.openChannel()
            try await channel.publish(#"{"note":"three"}"#, exchange: node.exchange, routingKey: route,
                                      properties: BasicProperties(contentType: "application/json", messageID: amqpID, appID: "billing"))
            expected.append(amqpID)
            _ = try await Self.clockPast(amqpID)
            // Another back end names a random (version 4) message id, as many AMQP libraries do. It
            // begins with `f`: ordered by id it would be the conversation's newest for centuries;
            // it is placed when the store took it.
            let randomID = "f" + UUID().uuidString.lowercased().dropFirst()
            try await channel.publish(#"{"note":"four"}"#, exchange: node.exchange, routingKey: route,
                                      properties: BasicProperties(contentType: "application/json", messageID: randomID, appID: "crm"))
            expected.append(randomID)
            try await Self.awaitStored(node, user: alice, route: route, ids: expected)
            _ = try await Self.clockPast(UUIDv7Generator().next(nowMilliseconds: UInt64(Date().timeIntervalSince1970 * 1000)))
            for n in 5...7 {
                let p = try await ws.request(#"{"op":"pub","route":"\#(route)","body":"\#(n)"}"#, expect: "puback")
                expected.append(try #require(p["id"]?.stringValue))
            }
            // The same cid again is acknowledged with the first id, not kept twice.
            let again = try await ws.request(#"{"op":"pub","route":"\#(route)","body":"one","cid":"c1"}"#, expect: "puback")
            #expect(again["id"]?.stringValue == expected[0])
            try await Self.awaitStored(node, user: alice, route: route, ids: expected)

            let all = try await Self.history(node, user: bob, "route=\(route)")
            #expect(all.status == 200)
            let messages = all.json?["messages"]?.arrayValue ?? []
            #expect(messages.compactMap { $0["id"]?.stringValue } == expected, "every door, in order, once, nothing transient")
            #expect(messages[2]["from"]?.stringValue == "billing" && messages[2]["via"]?.stringValue == "amqp")
            #expect(messages[2]["body"]?["note"]?.stringValue == "three")
            #expect(messages[1]["from"]?.stringValue == bob && messages[1]["via"]?.stringValue == "poll")
            #expect(messages[3]["from"]?.stringValue == "crm")
            #expect(all.json?["more"]?.boolValue == false)
            let list = try await HTTPTestClient.request(.GET, port: node.port, "/v1/conversations?user=\(alice)")
            #expect(list.json?["conversations"]?.arrayValue?.first?["last"]?["id"]?.stringValue == expected.last,
                    "the conversation's newest message is the last one stored, whatever ids came before")

            let newest = try await Self.history(node, user: alice, "route=\(route)&limit=4")
            #expect(newest.json?["messages"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == Array(expected[3...]))
            #expect(newest.json?["more"]?.boolValue == true)
            let older = try await Self.history(node, user: alice, "route=\(route)&limit=4&before=\(expected[3])")
            #expect(older.json?["messages"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == Array(expected[..<3]))
            #expect(older.json?["more"]?.boolValue == false)
            // A limit past what an integer holds is above store.max_page: clamped, not a 400.
            let huge = try await Self.history(node, user: alice, "route=\(route)&limit=99999999999999999999")
            #expect(huge.status == 200 && huge.json?["messages"]?.arrayValue?.count == expected.count, "\(huge.body)")

            // The store's figures on /metrics: batches written, the database up, the queue's lag.
            let metrics = try await HTTPTestClient.request(.GET, port: node.port, "/metrics").body
            let written = metrics.split(separator: "\n").first { $0.hasPrefix("warren_store_written_total ") }
                .flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
            #expect(written >= Double(expected.count), "\(metrics)")
            #expect(metrics.contains("warren_store_up 1"))
            #expect(metrics.contains("warren_store_write_seconds_count"))
            #expect(metrics.contains("warren_store_batch_size_bucket"))
            #expect(metrics.contains("warren_store_lag_messages"))

            // The same page over the WebSocket.
            let page = try await ws.request(#"{"op":"history","id":"h1","route":"\#(route)","limit":2}"#, expect: "history")
            #expect(page["id"]?.stringValue == "h1")
            #expect(page["messages"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == Array(expected[5...]))
            #expect(page["more"]?.boolValue == true)
            await connection.close()
            _ = await ws.close()
        }
    }

    @Test(arguments: StoreBackend.allCases) func historyIsReadOnlyWithinSubscribeRights(_ backend: StoreBackend) async throws {
        try await Self.withStoreNode(backend) { node in
            let alice = uniqueUser("alice"), bob = uniqueUser("bob"), mallory = uniqueUser("mallory")
            let route = [alice, bob].sorted().joined(separator: ".")
            let ws = try await node.socket(alice)
            let p = try await ws.request(#"{"op":"pub","route":"\#(route)","body":"secret"}"#, expect: "puback")
            try await Self.awaitStored(node, user: alice, route: route, id: try #require(p["id"]?.stringValue))

            let forbidden = try await Self.history(node, user: mallory, "route=\(route)")
            #expect(forbidden.status == 403)
            #expect(forbidden.json?["error"]?["code"]?.stringValue == "forbidden")
            // Wildcard-looking input is not a route: refused, never read.
            for attempt in ["%23", "*.\(bob)", "\(alice).%23", "%23.\(mallory).%23"] {
                let r = try await Self.history(node, user: mallory, "route=\(attempt)")
                #expect(r.status == 400, "\(attempt): \(r.body)")
                #expect(r.json?["error"]?["code"]?.stringValue == "bad_route")
                #expect(r.json?["messages"] == nil)
            }
            let sneaky = try await node.socket(mallory)
            let refused = try await sneaky.request(#"{"op":"history","id":"h9","route":"\#(route)"}"#, expect: "error")
            #expect(refused["code"]?.stringValue == "forbidden")
            #expect(refused["ref"]?.stringValue == "h9")
            let list = try await sneaky.request(#"{"op":"conversations","id":"c9"}"#, expect: "conversations")
            #expect(list["conversations"]?.arrayValue?.isEmpty == true)
            _ = await sneaky.close()
            _ = await ws.close()
        }
    }

    @Test(arguments: StoreBackend.allCases) func conversationsUnreadCountsAndReadMarkersReachTheOtherSocket(_ backend: StoreBackend) async throws {
        try await Self.withStoreNode(backend) { node in
            let alice = uniqueUser("alice"), bob = uniqueUser("bob"), carol = uniqueUser("carol")
            let pair = [alice, bob].sorted().joined(separator: ".")
            let group = "room.g\(UUID().uuidString.prefix(6).lowercased())"
            let bobSocket = try await node.socket(bob)
            var ids: [String] = []
            for n in 1...3 {
                let p = try await bobSocket.request(#"{"op":"pub","route":"\#(pair)","body":"\#(n)"}"#, expect: "puback")
                ids.append(try #require(p["id"]?.stringValue))
            }
            let notice = try await bobSocket.request(#"{"op":"pub","route":"\#(pair)","type":"notice","body":"n"}"#, expect: "puback")
            let aliceSocket = try await node.socket(alice, device: "phone")
            let own = try await aliceSocket.request(#"{"op":"pub","route":"\#(pair)","body":"mine"}"#, expect: "puback")
            // A room alice posts in (its words do not name her), and one she never posted in.
            _ = try await HTTPTestClient.request(.POST, port: node.port, "/v1/messages?user=\(carol)", body: #"{"route":"room.x\#(carol)","body":"r"}"#)
            let posted = try await aliceSocket.request(#"{"op":"pub","route":"\#(group)","body":"g"}"#, expect: "puback")
            _ = own
            _ = notice
            try await Self.awaitStored(node, user: alice, route: group, id: try #require(posted["id"]?.stringValue))

            var list = try await aliceSocket.request(#"{"op":"conversations","id":"c1"}"#, expect: "conversations")
            var entries = list["conversations"]?.arrayValue ?? []
            #expect(entries.compactMap { $0["route"]?.stringValue } == [group, pair], "newest activity first")
            let pairEntry = entries.first { $0["route"]?.stringValue == pair }
            #expect(pairEntry?["unread"]?.intValue == 3, "bob's three texts: not the notice, not alice's own")
            #expect(pairEntry?["read"] == .null)
            #expect(pairEntry?["last"]?["body"]?.stringValue == "mine")

            // Alice's laptop listens on the conversation; her phone reads up to the second message.
            let laptop = try await node.socket(alice, device: "laptop")
            try await laptop.subscribe("s1", pair)
            let marker = try await aliceSocket.request(#"{"op":"read","route":"\#(pair)","id":"\#(ids[1])"}"#, expect: "read")
            #expect(marker["id"]?.stringValue == ids[1])
            let receipt = try await laptop.next(op: "msg")
            #expect(receipt["env"]?["type"]?.stringValue == "read")
            #expect(receipt["env"]?["from"]?.stringValue == alice)
            #expect(receipt["env"]?["body"]?["id"]?.stringValue == ids[1])
            #expect(receipt["env"]?["transient"]?.boolValue == true)

            // Never back: an older id leaves the marker where it is (answered with it), over HTTP too.
            let back = try await aliceSocket.request(#"{"op":"read","route":"\#(pair)","id":"\#(ids[0])"}"#, expect: "read")
            #expect(back["id"]?.stringValue == ids[1])
            let httpBack = try await HTTPTestClient.request(.POST, port: node.port, "/v1/read?user=\(alice)",
                                                            body: #"{"route":"\#(pair)","id":"\#(ids[0])"}"#)
            #expect(httpBack.status == 204)
            let viaHTTP = try await HTTPTestClient.request(.GET, port: node.port, "/v1/conversations?user=\(alice)")
            entries = viaHTTP.json?["conversations"]?.arrayValue ?? []
            #expect(entries.first { $0["route"]?.stringValue == pair }?["read"]?.stringValue == ids[1])
            #expect(entries.first { $0["route"]?.stringValue == pair }?["unread"]?.intValue == 1)

            let forward = try await HTTPTestClient.request(.POST, port: node.port, "/v1/read?user=\(alice)",
                                                           body: #"{"route":"\#(pair)","id":"\#(ids[2])"}"#)
            #expect(forward.status == 204)
            let second = try await laptop.next(op: "msg")
            #expect(second["env"]?["body"]?["id"]?.stringValue == ids[2], "the HTTP read reaches the socket too")
            list = try await aliceSocket.request(#"{"op":"conversations","id":"c2"}"#, expect: "conversations")
            entries = list["conversations"]?.arrayValue ?? []
            #expect(entries.first { $0["route"]?.stringValue == pair }?["unread"]?.intValue == 0)
            // Bob's view of the same conversation counts alice's message only.
            let bobList = try await bobSocket.request(#"{"op":"conversations","id":"c3"}"#, expect: "conversations")
            #expect(bobList["conversations"]?.arrayValue?.first { $0["route"]?.stringValue == pair }?["unread"]?.intValue == 1)
            // The read envelopes themselves are not kept.
            let kept = try await Self.history(node, user: alice, "route=\(pair)")
            #expect(kept.json?["messages"]?.arrayValue?.contains { $0["type"]?.stringValue == "read" } == false)
            for s in [bobSocket, aliceSocket, laptop] { _ = await s.close() }
        }
    }

    /// A second node started on the same broker with an SQLite store of its own (another file,
    /// another working directory) consumes the store queue beside the first, and each keeps only
    /// what it consumes: it says so at start. Nodes on one PostgreSQL share the queue as they
    /// should, and say nothing (the check is made before "warren is ready").
    @Test(arguments: StoreBackend.allCases) func aNodeWithAStoreOfItsOwnBesideAnotherSaysSo(_ backend: StoreBackend) async throws {
        let firstStore = try await Self.makeDatabase(backend)
        let secondStore = backend == .sqlite ? try await Self.makeDatabase(.sqlite) : firstStore
        let queue = "test.store.\(UUID().uuidString.prefix(8).lowercased())"
        let settings = ["WARREN_STORE_ENABLED": "true", "WARREN_STORE_QUEUE": queue]
        let first = try await WarrenInstance.start(settings.merging(["WARREN_STORE_URL": firstStore.url]) { $1 })
        let second = try await WarrenInstance.start(settings.merging(["WARREN_STORE_URL": secondStore.url]) { $1 }, exchange: first.exchange)
        let warned = second.process.log.contains("already has 1 consumer(s)")
        let firstWarned = first.process.log.contains("consumer(s)")
        await second.stop()
        await first.stop()
        await firstStore.remove()
        if backend == .sqlite { await secondStore.remove() }
        try await Self.deleteQueue(queue)
        #expect(warned == (backend == .sqlite), "\(second.process.log)")
        #expect(!firstWarned, "the first node had the queue to itself: \(first.process.log)")
    }

    /// A back end's message with a NUL character where the store keeps a column (PostgreSQL's
    /// text cannot hold one): in a `from` header, in an envelope body's `from`, in a routing key,
    /// in the type of a message bearing Warren's own mark.
    /// None may stop the store (a batch refused by the database was written again forever,
    /// and nothing after it was kept): the message after them is kept.
    @Test(arguments: StoreBackend.allCases) func aBackEndsMessageWithANulCharacterDoesNotStopTheStore(_ backend: StoreBackend) async throws {
        try await Self.withStoreNode(backend) { node in
            let alice = uniqueUser("alice"), room = "room.\(uniqueUser("r"))"
            let connection = try await AMQPConnection.connect(configuration: try AMQPConfiguration(url: WarrenInstance.brokerURL))
            let channel = try await connection.openChannel()
            try await channel.publish("nul in the from header", exchange: node.exchange, routingKey: room,
                                      properties: BasicProperties(headers: ["from": .string("back\u{0}end")]))
            try await channel.publish(#"{"v":1,"from":"back\u0000end","body":"nul in the envelope's from"}"#, exchange: node.exchange,
                                      routingKey: room, properties: BasicProperties(contentType: "application/json"))
            try await channel.publish("nul in the route", exchange: node.exchange, routingKey: "\(room)\u{0}x", properties: BasicProperties())
            // Warren's own mark, which any publisher can set, with a NUL in the type: not kept.
            let forgedID = UUIDv7Generator().next(nowMilliseconds: UInt64(Date().timeIntervalSince1970 * 1000))
            try await channel.publish(#"{"v":1,"id":"\#(forgedID)","route":"\#(room)","type":"text","from":"mallory","body":"nul in the type"}"#,
                                      exchange: node.exchange, routingKey: room,
                                      properties: BasicProperties(contentType: "application/json", headers: ["from": .string("mallory")],
                                                                  messageID: forgedID, type: "te\u{0}xt", appID: "warren"))
            let sentinel = UUIDv7Generator().next(nowMilliseconds: UInt64(Date().timeIntervalSince1970 * 1000))
            try await channel.publish("after", exchange: node.exchange, routingKey: room,
                                      properties: BasicProperties(messageID: sentinel, appID: "billing"))
            await connection.close()
            try await Self.awaitStored(node, user: alice, route: room, id: sentinel)
            let messages = try await Self.history(node, user: alice, "route=\(room)").json?["messages"]?.arrayValue ?? []
            // (In no set order: the sentinel's id is the test's, the others' the store's.)
            let from = Dictionary(messages.compactMap { m in m["body"]?.stringValue.map { ($0, m["from"]?.stringValue ?? "") } }) { a, _ in a }
            #expect(Set(from.keys) == ["nul in the from header", "nul in the envelope's from", "after"], "\(messages)")
            // A name with a control character is not believed: the back end is named as one that gave none.
            #expect(from["nul in the from header"] == "amqp" && from["nul in the envelope's from"] == "amqp", "\(messages)")
        }
    }

    /// `store.patterns` narrowed between two starts (`#` to `room.#`, to stop keeping private
    /// conversations): the second start unbinds `#` from the durable store queue, and a private
    /// message published after it is not kept while the room's is.
    @Test(arguments: StoreBackend.allCases) func narrowingStorePatternsStopsKeepingWhatItLeavesOut(_ backend: StoreBackend) async throws {
        let database = try await Self.makeDatabase(backend)
        let queue = "test.store.\(UUID().uuidString.prefix(8).lowercased())"
        let settings = ["WARREN_STORE_ENABLED": "true", "WARREN_STORE_QUEUE": queue, "WARREN_STORE_URL": database.url]
        func bindings(_ exchange: String) throws -> [String] {
            let listed = try TestEnvironment.rabbitmqctl(["list_bindings", "source_name", "destination_name", "routing_key", "--quiet"])
            let rows: [[String]] = listed.split(separator: "\n").map { line in line.split(separator: "\t").map(String.init) }
            let ours: [[String]] = rows.filter { $0.count == 3 && $0[0] == exchange && $0[1] == queue }
            return ours.map { $0[2] }.sorted()
        }
        let first = try await WarrenInstance.start(settings)
        let exchange = first.exchange
        await first.stop()
        let firstBindings = try bindings(exchange)
        let second = try await WarrenInstance.start(settings.merging(["WARREN_STORE_PATTERNS": "room.#"]) { $1 }, exchange: exchange)
        let secondBindings = try bindings(exchange)
        let alice = uniqueUser("alice"), room = "room.\(uniqueUser("r"))"
        let poller = Poller(port: second.port, user: alice, session: "")
        let secret = try await poller.publish(#"{"route":"\#(alice).bob","body":"private"}"#)["id"]?.stringValue
        let sentinel = try #require(try await poller.publish(#"{"route":"\#(room)","body":"public"}"#)["id"]?.stringValue)
        var stored = true
        do { try await Self.awaitStored(second, user: alice, route: room, id: sentinel) } catch { stored = false }
        let privateHistory = try await Self.history(second, user: alice, "route=\(alice).bob").json?["messages"]?.arrayValue
        let log = second.process.log
        await second.stop()
        await database.remove()
        try await Self.deleteQueue(queue)
        #expect(firstBindings == ["#"] && secondBindings == ["room.#"], "\(firstBindings) then \(secondBindings)")
        #expect(secret != nil && stored)
        #expect(privateHistory?.isEmpty == true, "\(String(describing: privateHistory))")
        #expect(log.contains("unbound a pattern no longer configured from a store queue") && log.contains("not in store.patterns"),
                "\(log)")
    }

    /// `store.queue_type` decides the type of a store queue declared afresh (quorum here, with
    /// a delivery limit no redelivery reaches, ``QueueArguments``); a
    /// queue already there of another type is used as it is (RabbitMQ refuses to declare it with
    /// the new arguments), the start log says so, and messages are still stored.
    @Test func aStoreQueueOfAnotherTypeIsUsedAsItIs() async throws {
        let database = try await Self.makeDatabase(.sqlite)
        let queue = "test.store.\(UUID().uuidString.prefix(8).lowercased())"
        let settings = ["WARREN_STORE_ENABLED": "true", "WARREN_STORE_QUEUE": queue, "WARREN_STORE_URL": database.url]
        func type() throws -> String? {
            let listed = try TestEnvironment.rabbitmqctl(["list_queues", "name", "type", "--quiet"])
            return listed.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }.first { $0.first == queue }?.last
        }
        let first = try await WarrenInstance.start(settings.merging(["WARREN_STORE_QUEUE_TYPE": "quorum"]) { $1 })
        let exchange = first.exchange
        await first.stop()
        let declared = try type()
        let arguments = try TestEnvironment.rabbitmqctl(["list_queues", "name", "arguments", "--quiet"])
            .split(separator: "\n").filter { $0.hasPrefix("\(queue)\t") }.joined()
        #expect(arguments.contains("x-delivery-limit") && arguments.contains("1000000"), "\(arguments)")
        let second = try await WarrenInstance.start(settings.merging(["WARREN_STORE_QUEUE_TYPE": "classic"]) { $1 }, exchange: exchange)
        let alice = uniqueUser("alice"), room = "room.\(uniqueUser("r"))"
        let poller = Poller(port: second.port, user: alice, session: "")
        let id = try #require(try await poller.publish(#"{"route":"\#(room)","body":"kept"}"#)["id"]?.stringValue)
        var stored = true
        do { try await Self.awaitStored(second, user: alice, route: room, id: id) } catch { stored = false }
        let log = second.process.log
        let afterwards = try type()
        await second.stop()
        await database.remove()
        try await Self.deleteQueue(queue)
        #expect(declared == "quorum" && afterwards == "quorum", "\(String(describing: declared)), then \(String(describing: afterwards))")
        #expect(stored)
        #expect(log.contains("the store's queue was declared with other arguments and is used as it is"), "\(log)")
    }
}
