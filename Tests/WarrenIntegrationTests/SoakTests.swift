import AMQPClient
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import NIOHTTP1
import Testing
import WarrenCore

/// Progress lines for a person watching a long run (`tail -f /tmp/warren-soak.log`): Swift
/// Testing's own output is only seen at the end.
func soakProgress(_ line: String) {
    let text = "\(Date()) \(line)\n"
    guard let handle = FileHandle(forWritingAtPath: "/tmp/warren-soak.log") else {
        _ = FileManager.default.createFile(atPath: "/tmp/warren-soak.log", contents: Data(text.utf8))
        return
    }
    handle.seekToEndOfFile()
    handle.write(Data(text.utf8))
    try? handle.close()
}

/// Issue 6, item 1: publishers on all three frontends send numbered messages to inbox
/// subscribers on two nodes (two on WebSockets, one long-polling) while the test kills a node, closes every broker connection,
/// stops and starts RabbitMQ, and cuts client sockets mid-frame. Every publish a client was
/// told succeeded must reach every subscriber's inbox, in publish order per publisher
/// connection. `WARREN_SOAK_MESSAGES` sets the size (default: a short form for CI);
/// scripts/soak.sh runs the long form.
@Suite("Soak: nothing acknowledged is lost", .serialized)
struct SoakTests {
    static let target = Int(ProcessInfo.processInfo.environment["WARREN_SOAK_MESSAGES"] ?? "") ?? 4000
    static let faultRounds = Int(ProcessInfo.processInfo.environment["WARREN_SOAK_FAULT_ROUNDS"] ?? "") ?? 1

    enum Fault: String, CaseIterable { case killNode, closeBrokerConnections, restartBroker, dropSockets }

    @Test func acknowledgedMessagesSurviveEveryFault() async throws {
        let environment = ["WARREN_INBOX_QUEUE_TYPE": "quorum", "WARREN_AMQP_RECONNECT_MAX_MS": "500",
                           "WARREN_AMQP_RECONNECT_INITIAL_MS": "50", "WARREN_LIMITS_PUBLISH_RATE": "0",
                           "WARREN_LIMITS_MAX_PENDING_PUBLISHES": "1000", "WARREN_AMQP_HEARTBEAT": "5",
                           "WARREN_ACL_PUBLISH": "#",
                           // A full inbox refuses publishes (they are not acknowledged) rather than
                           // dropping its oldest message, which drop-head would do to an acked one.
                           "WARREN_INBOX_OVERFLOW": "reject-publish", "WARREN_INBOX_MAX_LENGTH": "1000000"]
        let cluster = try await SoakCluster.start(count: 2, environment: environment)
        let ledger = SoakLedger()
        // Two inbox subscribers on WebSockets and one polling, on the same route.
        let subscribers = [uniqueUser("soaka"), uniqueUser("soakb"), uniqueUser("soakp")]
        let route = "soak.\(subscribers.joined(separator: "."))"
        let done = Mailbox<Bool>()           // publishers finished
        let faultsDone = Mailbox<Bool>()
        let started = ContinuousClock.now

        // Subscribers first: their inboxes are bound before anything is published.
        let ready = Mailbox<Bool>()
        let subscriberTasks = Self.startSubscribers(subscribers, cluster: cluster, ledger: ledger, ready: ready, done: done)
        for _ in subscribers { #expect(await ready.next(timeout: .seconds(60)) == true) }

        let faults = Task { () -> [String] in
            var log: [String] = []
            for round in 0..<Self.faultRounds {
                for fault in Fault.allCases.shuffled() {
                    try? await Task.sleep(for: .milliseconds(Int64.random(in: 300...1500)))
                    let node = Int.random(in: 0...1)
                    let t0 = ContinuousClock.now
                    soakProgress("fault \(fault.rawValue) on node \(node); sent \(await ledger.sent), acked \(await ledger.acked.count)")
                    switch fault {
                    case .killNode:
                        do { try await cluster.killAndReplace(node) } catch { soakProgress("replacing node \(node) failed: \(error)") }
                    case .closeBrokerConnections: _ = try? Broker.ctl("close_all_connections", "soak fault")
                    case .restartBroker:
                        _ = try? Broker.ctl("stop_app")
                        try? await Task.sleep(for: .milliseconds(500))
                        _ = try? Broker.ctl("start_app")
                    case .dropSockets: await cluster.dropSockets(node)
                    }
                    // Let the bridge come back before the next fault.
                    let readyBy = ContinuousClock.now + .seconds(60)
                    while ContinuousClock.now < readyBy, !(await cluster.allReady()) { try? await Task.sleep(for: .milliseconds(100)) }
                    log.append("round \(round) \(fault.rawValue)(node \(node)) recovered in \(ContinuousClock.now - t0)")
                    soakProgress(log.last!)
                }
            }
            await faultsDone.append(true)
            return log
        }

        let publishers = Self.startPublishers(target: Self.target, route: route, cluster: cluster, ledger: ledger,
                                              faultsDone: faultsDone)
        for p in publishers { await p.value }
        let faultLog = await faults.value
        let publishedIn = ContinuousClock.now - started

        // Wait (bounded) for every acknowledged message to arrive everywhere.
        let deadline = ContinuousClock.now + .seconds(120)
        soakProgress("publishers done in \(publishedIn): sent \(await ledger.sent), acked \(await ledger.acked.count)")
        while ContinuousClock.now < deadline {
            var missing = 0
            for s in subscribers { missing += await ledger.missing(s) }
            soakProgress("waiting for \(missing) deliveries")
            if missing == 0 { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        for _ in subscriberTasks { await done.append(true) }
        for t in subscriberTasks { await t.value }

        let acked = await ledger.acked.count
        let delivered = await ledger.deliveredPairs(subscribers)
        let duplicates = await ledger.duplicates
        let lost = acked * subscribers.count - delivered
        let violations = await ledger.orderViolations
        for line in faultLog { print("soak fault: \(line)") }
        print("soak: sent \(await ledger.sent), acked \(acked) (× \(subscribers.count) inboxes), delivered \(delivered), "
              + "duplicates \(duplicates), lost \(lost), order violations \(violations.count); published in \(publishedIn)")
        if lost > 0 {
            // What the nodes serving at the end said went wrong (a replaced node's log is gone).
            for (i, node) in await cluster.nodes.enumerated() {
                let lines = node.process.log.split(separator: "\n").filter { line in [" info ", "\"info\"", " debug ", "\"debug\""].allSatisfy { !line.contains($0) } }
                print("soak: Warren node \(i)'s warnings and errors:\n\(lines.suffix(80).joined(separator: "\n"))")
            }
        }
        #expect(faultLog.count == Fault.allCases.count * Self.faultRounds)
        #expect(acked >= Self.target)
        let neverDelivered = await ledger.missingKeys(subscribers)
        #expect(lost == 0, "never delivered: \(neverDelivered)")
        #expect(violations.isEmpty, "\(violations)")
        await cluster.stopAll()
        for user in subscribers.dropLast() { _ = try? Broker.ctl("delete_queue", "warren.inbox.\(user).soak") }
        _ = try? Broker.ctl("delete_queue", "warren.inbox.\(subscribers.last!).soakpoll")
    }

    /// The subscribers' tasks: the last of `users` polls, the others hold WebSockets; each has a
    /// home node of its own (`ready` gets one value per subscriber once it is subscribed).
    static func startSubscribers(_ users: [String], cluster: SoakCluster, ledger: SoakLedger, ready: Mailbox<Bool>,
                                 done: Mailbox<Bool>) -> [Task<Void, Never>] {
        users.enumerated().map { k, user in
            Task {
                if k == users.count - 1 {
                    await poll(user: user, home: k, cluster: cluster, ledger: ledger, ready: ready, done: done)
                } else {
                    await subscribe(user: user, home: k, cluster: cluster, ledger: ledger, ready: ready, done: done, all: users)
                }
            }
        }
    }

    /// Publishers: WebSocket ×2, HTTP ×2, AMQP ×1 (to `amqpBrokers`), each until its share of
    /// `target` is acknowledged and the faults are over.
    static func startPublishers(target: Int, route: String, cluster: SoakCluster, ledger: SoakLedger, faultsDone: Mailbox<Bool>,
                                amqpBrokers: [String] = [WarrenInstance.brokerURL]) -> [Task<Void, Never>] {
        let shares = [("ws0", 0.3), ("ws1", 0.3), ("http0", 0.075), ("http1", 0.075), ("amqp0", 0.25)]
        return shares.enumerated().map { k, share in
            let quota = max(1, Int(Double(target) * share.1))
            return Task {
                switch share.0.prefix(2) {
                case "ws": await publishWS(name: share.0, quota: quota, node: k, route: route, cluster: cluster,
                                           ledger: ledger, faultsDone: faultsDone)
                case "ht": await publishHTTP(name: share.0, quota: quota, node: k, route: route, cluster: cluster,
                                             ledger: ledger, faultsDone: faultsDone)
                default: await publishAMQP(name: share.0, quota: quota, route: route, exchange: cluster.exchange,
                                           ledger: ledger, faultsDone: faultsDone, brokers: amqpBrokers)
                }
            }
        }
    }

    // MARK: subscribers

    /// One inbox subscriber: acks every delivery; reconnects (to its home node, else the other)
    /// whenever its socket ends, until told the test is done.
    static func subscribe(user: String, home: Int, cluster: SoakCluster, ledger: SoakLedger, ready: Mailbox<Bool>,
                          done: Mailbox<Bool>, all: [String]) async {
        var first = true
        var attempt = 0
        while await done.pending == 0 {
            let port = await cluster.port(home + attempt)
            attempt += 1
            guard let socket = try? await TestSocket.connect(port: port, query: "user=\(user)&device=soak", name: user),
                  (try? await socket.subscribe("inbox", "#.\(user).#", mode: "inbox")) != nil else {
                try? await Task.sleep(for: .milliseconds(100))
                continue
            }
            if first { await ready.append(true); first = false }
            attempt = 0
            while await done.pending == 0 {
                guard let frame = await socket.next(timeout: .seconds(1)) else {
                    // Quiet, or gone: a ping tells which.
                    if (try? await socket.request(#"{"op":"ping"}"#, expect: "pong")) == nil { break }
                    continue
                }
                guard frame["op"]?.stringValue == "msg", let env = frame["env"], let id = env["id"]?.stringValue,
                      let body = env["body"], let p = body["p"]?.stringValue,
                      let c = body["c"]?.intValue, let n = body["n"]?.intValue else { continue }
                await ledger.deliver(subscriber: user, id: id, p: p, c: Int(c), n: Int(n),
                                     redelivered: frame["redelivered"] == .bool(true))
                try? await socket.send(#"{"op":"ack","id":"\#(id)"}"#)
            }
            _ = await socket.close()
        }
    }

    /// One inbox subscriber over long-polling, as a poller behind a load balancer would: one
    /// session (made on its home node), each answer's cursor acked by the next poll, and when a
    /// poll fails (its node killed, its socket cut, the broker link down) the same session polled
    /// on the next node after a pause, until told the test is done. What a node leased and did
    /// not see acked comes again (after `poll.lease`, or at once when the node's broker
    /// connection went): recorded as a redelivery.
    static func poll(user: String, home: Int, cluster: SoakCluster, ledger: SoakLedger, ready: Mailbox<Bool>,
                     done: Mailbox<Bool>) async {
        var poller: Poller?
        var attempt = 0
        var cursor: String?
        while await done.pending == 0 {
            let port = await cluster.port(home + attempt)
            guard let p = poller else {
                poller = try? await Poller.open(port: port, user: user,
                                                subscriptions: ##"[{"id":"inbox","pattern":"#.\##(user).#","mode":"inbox"}]"##,
                                                device: "soakpoll")
                // Its first poll acks the 201's cursor of no answer yet, as the client libraries
                // do: a first answer lost on the way then comes again.
                cursor = poller?.firstCursor
                if poller != nil { await ready.append(true) } else {
                    attempt += 1
                    try? await Task.sleep(for: .milliseconds(100))
                }
                continue
            }
            do {
                let answer = try await p.poll(wait: 2, ack: cursor, on: port)
                cursor = answer.cursor
                for m in answer.messages {
                    guard let env = m["env"], let id = env["id"]?.stringValue, let body = env["body"],
                          let pub = body["p"]?.stringValue, let c = body["c"]?.intValue, let n = body["n"]?.intValue else { continue }
                    await ledger.deliver(subscriber: user, id: id, p: pub, c: Int(c), n: Int(n),
                                         redelivered: m["redelivered"] == .bool(true))
                }
            } catch {
                // The cursor stays that of the last answer read, as the client libraries keep it
                // (README, Polling): sent with the next poll, on whichever node, it says that an
                // answer made after it never arrived. Dropped here before 2026-12-03, the next
                // poll said nothing, and a later cursor of the node whose answer was lost acked
                // it unseen (a CI run lost one message; one in two local runs of three fault
                // rounds lost a whole answer, 99).
                soakProgress("poll of \(user) on port \(port) failed (\(error)); acking \(cursor ?? "nothing") next")
                attempt += 1
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    // MARK: publishers

    /// Whether a publisher goes on: until its share is acknowledged and the faults are over.
    static func more(_ acked: Int, _ quota: Int, _ faultsDone: Mailbox<Bool>) async -> Bool {
        if acked < quota { return true }
        return await faultsDone.pending == 0
    }

    static func body(_ p: String, _ c: Int, _ n: Int) -> String { #"{"p":"\#(p)","c":\#(c),"n":\#(n)}"# }

    /// Pipelined WebSocket publishes in windows of 50; a window not fully answered means the
    /// socket is gone: reconnect (a new connection, so a new order stream) and go on.
    static func publishWS(name: String, quota: Int, node: Int, route: String, cluster: SoakCluster, ledger: SoakLedger,
                          faultsDone: Mailbox<Bool>) async {
        var n = 0, c = 0, attempt = 0, ackedHere = 0
        while await Self.more(ackedHere, quota, faultsDone) {
            let port = await cluster.port(node + attempt)
            attempt += 1
            guard let socket = try? await TestSocket.connect(port: port, query: "user=\(name)\(route.hashValue & 0xffff)",
                                                             name: name) else {
                try? await Task.sleep(for: .milliseconds(100))
                continue
            }
            attempt = 0
            c += 1
            var healthy = true
            while healthy, await Self.more(ackedHere, quota, faultsDone) {
                var window: [String: Int] = [:]
                for _ in 0..<50 {
                    let cid = "c\(c)n\(n)"
                    window[cid] = n
                    if (try? await socket.send(#"{"op":"pub","route":"\#(route)","body":\#(body(name, c, n)),"cid":"\#(cid)"}"#)) == nil {
                        healthy = false
                    } else {
                        await ledger.published()
                    }
                    n += 1
                    if !healthy { break }
                }
                while healthy, !window.isEmpty {
                    guard let frame = await socket.next(timeout: .seconds(10)) else { healthy = false; break }
                    guard let cid = frame["cid"]?.stringValue ?? frame["ref"]?.stringValue, let k = window.removeValue(forKey: cid)
                    else { continue }
                    if frame["op"]?.stringValue == "puback" {
                        await ledger.ack("\(name)/\(k)")
                        ackedHere += 1
                    }
                }
            }
            _ = await socket.close()
        }
    }

    /// Sequential `POST /v1/messages`; a 202 is an acknowledgement.
    static func publishHTTP(name: String, quota: Int, node: Int, route: String, cluster: SoakCluster, ledger: SoakLedger,
                            faultsDone: Mailbox<Bool>) async {
        var n = 0, ackedHere = 0
        while await Self.more(ackedHere, quota, faultsDone) {
            let port = await cluster.port(node + n % 2)
            let r = try? await HTTPTestClient.request(.POST, port: port, "/v1/messages?user=\(name)",
                                                      body: #"{"route":"\#(route)","body":\#(body(name, 0, n))}"#)
            if r != nil { await ledger.published() }
            if r?.status == 202 {
                await ledger.ack("\(name)/\(n)")
                ackedHere += 1
            } else {
                try? await Task.sleep(for: .milliseconds(50))
            }
            n += 1
        }
    }

    /// Plain AMQP with publisher confirms, 100 in flight; a failed publish starts a new order
    /// stream once the connection has recovered.
    static func publishAMQP(name: String, quota: Int, route: String, exchange: String, ledger: SoakLedger,
                            faultsDone: Mailbox<Bool>, brokers: [String] = [WarrenInstance.brokerURL]) async {
        var configuration = try! AMQPConfiguration(urls: brokers)
        configuration.heartbeat = 5
        configuration.recovery = RecoveryPolicy(initialDelay: .milliseconds(50), maxDelay: .milliseconds(500))
        var connection: AMQPConnection?
        while connection == nil {
            connection = try? await AMQPConnection.connect(configuration: configuration)
            if connection == nil { try? await Task.sleep(for: .milliseconds(200)) }
        }
        var channel: AMQPChannel?
        var n = 0, c = 0, ackedHere = 0
        while await Self.more(ackedHere, quota, faultsDone) {
            if channel == nil {
                channel = try? await connection!.openChannel()
                if let ch = channel, (try? await ch.confirmSelect()) == nil { channel = nil }
                if channel == nil { try? await Task.sleep(for: .milliseconds(200)); continue }
                c += 1
            }
            var window: [(Int, EventLoopFuture<Void>)] = []
            for _ in 0..<100 {
                let properties = BasicProperties(contentType: "application/json", deliveryMode: 2,
                                                 messageID: UUID().uuidString.lowercased())
                guard let confirm = try? channel!.startPublish(ByteBuffer(string: body(name, c, n)), exchange: exchange,
                                                               routingKey: route, properties: properties,
                                                               timeout: .seconds(15)) else { n += 1; break }
                await ledger.published()
                window.append((n, confirm.futureResult))
                n += 1
            }
            var failed = window.isEmpty
            for (k, future) in window {
                if (try? await future.get()) != nil {
                    await ledger.ack("\(name)/\(k)")
                    ackedHere += 1
                } else {
                    failed = true
                }
            }
            if failed {
                try? await channel?.close()
                channel = nil
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        await connection?.close()
    }
}
