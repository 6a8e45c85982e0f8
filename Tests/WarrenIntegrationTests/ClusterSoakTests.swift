import Foundation
import Testing
import TestSupport
import WarrenCore

/// Issue 16: a RabbitMQ cluster losing nodes. Two Warren nodes, each given all three brokers
/// (in a different order, so they start on different ones); inbox users on both, two on
/// WebSockets and one polling; publishers over WebSocket, HTTP and AMQP (the AMQP one with the
/// cluster's list too). Each broker node
/// in turn is killed with SIGKILL and started again: every publish a client was told
/// succeeded reaches every inbox bound at publish time, live sockets keep receiving after
/// each failover, and `/readyz` is back to 200 within 10 s of each kill.
/// `WARREN_CLUSTER_SOAK_MESSAGES` and `WARREN_CLUSTER_SOAK_ROUNDS` set the size (default: the
/// short form for CI, 3,000 messages and one round); `scripts/soak.sh cluster` runs the long
/// form, each round killing every broker node once, the kills spread over the messages.
@Suite("Soak: a RabbitMQ cluster losing nodes", .serialized)
struct ClusterSoakTests {
    static let target = Int(ProcessInfo.processInfo.environment["WARREN_CLUSTER_SOAK_MESSAGES"] ?? "") ?? 3000
    static let rounds = max(1, Int(ProcessInfo.processInfo.environment["WARREN_CLUSTER_SOAK_ROUNDS"] ?? "") ?? 1)

    @Test func acknowledgedMessagesSurviveBrokerNodesBeingKilled() async throws {
        try await RabbitCluster.run("start")
        // Both nodes write one store (PostgreSQL) from one store queue: every acknowledged
        // message is kept too, whichever broker node holds the queue when it is killed.
        let database = try await StoreTests.makeDatabase(.postgres)
        let storeQueue = "soak.store.\(UUID().uuidString.prefix(8).lowercased())"
        let environment = ["WARREN_STORE_ENABLED": "true", "WARREN_STORE_URL": database.url, "WARREN_STORE_QUEUE": storeQueue,
                           "WARREN_INBOX_QUEUE_TYPE": "quorum", "WARREN_AMQP_RECONNECT_MAX_MS": "500",
                           "WARREN_AMQP_RECONNECT_INITIAL_MS": "50", "WARREN_LIMITS_PUBLISH_RATE": "0", "WARREN_LIMITS_QUERY_RATE": "0",
                           "WARREN_LIMITS_MAX_PENDING_PUBLISHES": "1000", "WARREN_AMQP_HEARTBEAT": "5",
                           "WARREN_ACL_PUBLISH": "#", "WARREN_INBOX_OVERFLOW": "reject-publish",
                           "WARREN_INBOX_MAX_LENGTH": "1000000"]
        let cluster = try await SoakCluster.start(count: 2, environment: environment, perNode: [
            ["WARREN_AMQP_URL": RabbitCluster.urls(from: 1).joined(separator: ",")],
            ["WARREN_AMQP_URL": RabbitCluster.urls(from: 2).joined(separator: ",")],
        ])
        let ledger = SoakLedger()
        let subscribers = [uniqueUser("clua"), uniqueUser("club"), uniqueUser("clup")]
        let route = "soak.\(subscribers.joined(separator: "."))"
        let done = Mailbox<Bool>()
        let faultsDone = Mailbox<Bool>()

        let ready = Mailbox<Bool>()
        let subscriberTasks = SoakTests.startSubscribers(subscribers, cluster: cluster, ledger: ledger, ready: ready, done: done)
        for _ in subscribers { #expect(await ready.next(timeout: .seconds(60)) == true) }

        // A live listener on each Warren node, and a sentinel after every failover.
        let room = "room.cluster\(UUID().uuidString.prefix(6).lowercased())"
        var listeners: [TestSocket] = []
        for i in 0..<2 {
            let s = try await TestSocket.connect(port: await cluster.directPort(i), query: "user=\(uniqueUser("live"))")
            try await s.subscribe("r", room)
            listeners.append(s)
        }

        let target = Self.target
        let kills = Self.rounds * 3
        let faults = Task { () -> [String] in
            var log: [String] = []
            for (k, node) in (0..<kills).map({ ($0, $0 % 3 + 1) }) {
                // The kills spread over the messages: kill k once k/(kills+1) of them are acknowledged.
                try? await Task.sleep(for: .milliseconds(800))
                let waitLimit = ContinuousClock.now + .seconds(600)
                while await ledger.acked.count < target * (k + 1) / (kills + 1), ContinuousClock.now < waitLimit {
                    try? await Task.sleep(for: .milliseconds(100))
                }
                // One node lost at a time, as the cluster is built to survive: the node restarted
                // before answers AMQP before its quorum queue members have caught up, and killing
                // another meanwhile left queues without a majority (their publishes unconfirmed
                // until a node came back).
                do {
                    try await RabbitCluster.run("settle", "\(node)")
                } catch {
                    log.append("node \(node) still quorum-critical: NOT settled before its kill")
                }
                soakProgress("kill -9 broker node \(node); acked \(await ledger.acked.count)")
                try? await RabbitCluster.run("kill", "\(node)")
                let t0 = ContinuousClock.now
                var readyAgain = false
                while !readyAgain, ContinuousClock.now < t0 + .seconds(10) {
                    try? await Task.sleep(for: .milliseconds(100))
                    readyAgain = await cluster.allReady()
                }
                log.append("node \(node) killed: both Warren nodes ready \(readyAgain ? "after \(ContinuousClock.now - t0)" : "NOT within 10 s")")
                soakProgress(log.last!)
                // Live sockets keep receiving: a sentinel from each node reaches every listener.
                for (i, listener) in listeners.enumerated() {
                    let sentinel = "after-\(k)-\(node)-\(i)"
                    // Answered with an error (the broker link dropped again as it came back, or
                    // a quorum queue between leaders nacked it), the client publishes again after
                    // a pause, as any client would (the libraries wait 0.5-1 s): only a puback
                    // promises anything.
                    var answer: JSONValue?
                    for attempt in 0..<20 {
                        if attempt > 0 { try? await Task.sleep(for: .milliseconds(500)) }
                        try? await listener.send(#"{"op":"pub","route":"\#(room)","body":"\#(sentinel)","cid":"\#(sentinel)"}"#)
                        // A puback names the cid in `cid`, an error in `ref` (docs/protocol.md).
                        answer = await listener.next { ($0["cid"] ?? $0["ref"])?.stringValue == sentinel }
                        guard answer?["op"]?.stringValue == "error" else { break }
                        log.append("publish of \(sentinel) answered \(answer.map { "\($0)" } ?? ""); published again")
                        let again = ContinuousClock.now + .seconds(10)
                        while await !cluster.allReady(), ContinuousClock.now < again { try? await Task.sleep(for: .milliseconds(100)) }
                    }
                    if answer?["op"]?.stringValue != "puback" {
                        log.append("publish of \(sentinel) missed its puback: \(answer.map { "\($0)" } ?? "no answer")")
                    }
                    for other in listeners {
                        var got: [String] = []
                        while got.last != sentinel, let f = try? await other.next(op: "msg", timeout: .seconds(10)) {
                            got.append(f["env"]?["body"]?.stringValue ?? "")
                        }
                        if got.last != sentinel { log.append("listener missed \(sentinel)") }
                    }
                }
                try? await RabbitCluster.run("restart", "\(node)")
                soakProgress("broker node \(node) back")
            }
            await faultsDone.append(true)
            return log
        }

        let publishers = SoakTests.startPublishers(target: target, route: route, cluster: cluster, ledger: ledger,
                                                   faultsDone: faultsDone, amqpBrokers: RabbitCluster.urls(from: 3))
        for p in publishers { await p.value }
        let faultLog = await faults.value

        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            var missing = 0
            for s in subscribers { missing += await ledger.missing(s) }
            if missing == 0 { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        // Then the store: every acknowledged message in the route's history.
        var unstored = Set(await ledger.acked)
        let storeDeadline = ContinuousClock.now + .seconds(120)
        while !unstored.isEmpty, ContinuousClock.now < storeDeadline {
            if let kept = try? await Self.storedKeys(port: await cluster.directPort(0), user: subscribers[0], route: route) {
                unstored.subtract(kept)
            }
            if !unstored.isEmpty { try await Task.sleep(for: .milliseconds(500)) }
        }
        for _ in subscriberTasks { await done.append(true) }
        for t in subscriberTasks { await t.value }
        for l in listeners { _ = await l.close() }

        let acked = await ledger.acked.count
        let delivered = await ledger.deliveredPairs(subscribers)
        let lost = acked * subscribers.count - delivered
        for line in faultLog { print("cluster soak: \(line)") }
        if faultLog.contains(where: { $0.contains("NOT") || $0.contains("missed") }) {
            for (i, node) in await cluster.nodes.enumerated() { print("cluster soak: Warren node \(i)'s log:\n\(node.process.log)") }
        }
        print("cluster soak: sent \(await ledger.sent), acked \(acked) (× \(subscribers.count) inboxes), delivered \(delivered), lost \(lost), "
              + "not stored \(unstored.count), order violations \(await ledger.orderViolations)")
        #expect(faultLog.filter { $0.contains("killed") }.count == kills, "\(faultLog)")
        #expect(faultLog.allSatisfy { !$0.contains("NOT") && !$0.contains("missed") }, "\(faultLog)")
        #expect(acked >= target)
        let neverDelivered = await ledger.missingKeys(subscribers)
        #expect(lost == 0, "never delivered: \(neverDelivered)")
        #expect(unstored.count == 0, "acknowledged but not stored, the first: \(unstored.sorted().prefix(20))")
        await cluster.stopAll()
        await database.remove()
        try? await RabbitCluster.run("stop")
    }

    /// The "p/n" keys of every message in `route`'s history, read page by page from the newest.
    static func storedKeys(port: Int, user: String, route: String) async throws -> Set<String> {
        var keys: Set<String> = []
        var before: String?
        repeat {
            let r = try await HTTPTestClient.request(.GET, port: port, "/v1/history?user=\(user)&route=\(route)&limit=200"
                                                     + (before.map { "&before=\($0)" } ?? ""))
            guard r.status == 200, let page = r.json, let messages = page["messages"]?.arrayValue else {
                throw SocketError(description: "history answered \(r.status): \(r.body)")
            }
            for m in messages {
                if let p = m["body"]?["p"]?.stringValue, let n = m["body"]?["n"]?.intValue { keys.insert("\(p)/\(n)") }
            }
            before = page["more"]?.boolValue == true ? messages.first?["id"]?.stringValue : nil
        } while before != nil
        return keys
    }
}
