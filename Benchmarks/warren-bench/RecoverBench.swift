import Foundation
import NIOCore
import WarrenBenchKit

/// `--scenarios recover`: `recoverSockets` WebSockets, each with a live subscription to one of
/// `recoverRooms` rooms, while the rooms get `recoverRate` messages a second in all. After
/// `recoverCutAfter` seconds every socket is closed at once; `recoverGap` seconds later all
/// reconnect (`lanes` at a time) and resubscribe `since` the last envelope each got. Once the
/// publishing ends and the deliveries settle: what each socket missed and got twice (over both
/// its connections), how the resubscriptions were answered, how long until every socket was
/// live again, the store queries per reconnect and Warren's CPU per replayed message. Once per
/// store backend in `recoverStores`.
struct RecoverBench {
    let options: BenchOptions
    let runner: Runner

    static func room(_ i: Int, rooms: Int) -> String { "room.rec\(i % rooms)" }

    func run() async throws -> [RecoverResult] {
        var results: [RecoverResult] = []
        for name in options.recoverStores.split(separator: ",") {
            guard let mode = StoreMode(rawValue: String(name)), mode != .off else {
                log("recover: unknown store \(name)")
                continue
            }
            do { results.append(try await run(mode)) } catch { log("  recover \(mode.rawValue) failed: \(error)") }
        }
        return results
    }

    func run(_ mode: StoreMode) async throws -> RecoverResult {
        let sockets = options.recoverSockets, rooms = options.recoverRooms, rate = options.recoverRate
        let messages = rate * options.recoverSeconds
        let keys = (0..<messages).map { Self.room($0, rooms: rooms) }
        runner.waitForQuietBroker(limit: options.quietSeconds)
        let database = try StoreSetup.freshDatabase(mode, name: "warren_bench_recover")
        let queue = "bench.store.\(UInt32.random(in: 0...UInt32.max))"
        var environment = mode.environment(database: database, queue: queue)
        environment["WARREN_RECOVER_MAX_MESSAGES"] = String(options.recoverMaxMessages)
        let warren = try WarrenProcess(binary: options.warrenBinary, config: options.config, port: options.warrenPort,
                                       amqpURL: options.amqpURL, exchange: options.exchange,
                                       log: "/tmp/warren-bench-warren.log", environment: environment)
        defer { warren.stop() }

        // Client i gets every message to its room: message j goes to room j % rooms.
        let owed = (0..<rooms).map { r in messages / rooms + (r < messages % rooms ? 1 : 0) }
        let expected = (0..<sockets).reduce(0) { $0 + owed[$1 % rooms] }
        let recorders = runner.clientGroup.makeIterator().map {
            Recorder(loop: $0, clients: sockets, messages: messages, expected: expected)
        }
        let ledgers = recorders.map { RecoveryLedger(loop: $0.loop, clients: sockets) }
        log("recover \(mode.rawValue): \(sockets) live sockets in \(rooms) rooms, \(rate) msg/s for \(options.recoverSeconds) s, cut at \(options.recoverCutAfter) s")

        var channels = try await connect(sockets, rooms: rooms, recorders: recorders, ledgers: ledgers, resume: false)
        let publishing = runner.publisher.run(keys: keys, window: options.window, rate: rate, messageIDs: true)
        try await Task.sleep(for: .seconds(1))
        let steadyStart = (BenchClock.now(), warren.probe.sample()?.cpuSeconds ?? 0)
        try await Task.sleep(for: .seconds(max(1, options.recoverCutAfter - 1)))
        let before = metrics()
        let cutAt = BenchClock.now()
        let cutCPU = warren.probe.sample()?.cpuSeconds ?? 0
        let steadyCPU = (cutCPU - steadyStart.1) / (Double(cutAt - steadyStart.0) / 1e9)
        for channel in channels { channel.close(promise: nil) }
        for channel in channels { try? await channel.closeFuture.get() }
        try await Task.sleep(for: .seconds(options.recoverGap))
        channels = try await connect(sockets, rooms: rooms, recorders: recorders, ledgers: ledgers, resume: true)
        let resubscribed = await latest(ledgers) { $0.answeredAt }
        // Every socket live again: each has had a message published after its answer.
        var live: UInt64 = 0
        for _ in 0..<600 {
            live = await latest(ledgers) { $0.liveAt }
            if live > 0 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        let liveCPU = warren.probe.sample()?.cpuSeconds ?? 0
        let after = metrics()
        let outcome = try await publishing.get()
        await runner.waitForDeliveries(recorders)
        for channel in channels { channel.close(promise: nil) }
        for channel in channels { try? await channel.closeFuture.get() }

        warren.stop()
        _ = try? await runner.publisher.deleteQueue(queue)   // durable and bound with `#`: it would keep every later run's messages
        let tally = try await Tally(recorders)
        var recovered = 0
        var reasons: [String: Int] = [:]
        var missedByRecovered = 0
        for (k, ledger) in ledgers.enumerated() {
            let recorder = recorders[k]
            let (r, why, missing) = try await ledger.loop.submit { () -> (Int, [String: Int], Int) in
                var missing = 0
                for i in stride(from: k, to: sockets, by: ledgers.count) where ledger.wasRecovered[i] == true {
                    missing += max(0, owed[i % rooms] - recorder.received(client: i))
                }
                return (ledger.recovered, ledger.reasons, missing)
            }.get()
            recovered += r
            reasons.merge(why, uniquingKeysWith: +)
            missedByRecovered += missing
        }
        let replayed = Int(after["warren_recovery_messages_total", default: 0] - before["warren_recovery_messages_total", default: 0])
        let queries = Int(after["warren_recovery_queries_total", default: 0] - before["warren_recovery_queries_total", default: 0])
        let window = live > cutAt ? Double(live - cutAt) / 1e9 : 0
        let extraCPU = (liveCPU - cutCPU) - steadyCPU * window
        let result = RecoverResult(
            store: mode.rawValue, sockets: sockets, rooms: rooms, rate: rate, published: outcome.confirmed,
            publishFailures: outcome.failed, expected: expected, missed: max(0, expected - tally.unique), missedByRecovered: missedByRecovered,
            duplicates: tally.duplicates, recovered: recovered, reasons: reasons,
            resubscribedSeconds: resubscribed > cutAt ? Double(resubscribed - cutAt) / 1e9 : 0,
            allLiveSeconds: live > cutAt ? window : -1,
            replayed: replayed, storeQueries: queries, queriesPerReconnect: Double(queries) / Double(sockets),
            warrenCPUMicrosPerReplayed: replayed > 0 && live > cutAt ? max(0, extraCPU) / Double(replayed) * 1e6 : nil,
            steadyWarrenCPU: steadyCPU, recoveryWarrenCPU: window > 0 ? (liveCPU - cutCPU) / window : 0,
            errors: tally.errors)
        log(String(format: "  recover %@: missed %d (by sockets answered recovered: %d), duplicates %d, recovered %d of %d (%@), resubscribed in %.2f s, all live in %.2f s, replayed %d, %.2f store queries per reconnect, Warren CPU %@ µs per replayed message (%.2f cores before the cut, %.2f while recovering)",
                   mode.rawValue, result.missed, result.missedByRecovered, result.duplicates, recovered, sockets,
                   reasons.map { "\($0.key) \($0.value)" }.sorted().joined(separator: ", "),
                   result.resubscribedSeconds, result.allLiveSeconds, replayed, result.queriesPerReconnect,
                   Report.f(result.warrenCPUMicrosPerReplayed, 2), steadyCPU, result.recoveryWarrenCPU))
        return result
    }

    /// Opens the sockets, `lanes` at a time; `resume`: each resubscribes `since` its last id.
    func connect(_ sockets: Int, rooms: Int, recorders: [Recorder], ledgers: [RecoveryLedger], resume: Bool) async throws -> [any Channel] {
        let lanes = max(1, min(options.lanes, sockets))
        let port = options.warrenPort
        return try await withThrowingTaskGroup(of: [any Channel].self) { group in
            for lane in 0..<lanes {
                group.addTask {
                    var mine: [any Channel] = []
                    var i = lane
                    while i < sockets {
                        let ledger = ledgers[i % ledgers.count]
                        let index = i
                        let since = resume ? try await ledger.loop.submit { ledger.lastID[index] }.get() : nil
                        mine.append(try await SocketClient.openRecovering(
                            port: port, path: "/v1/ws?user=r\(i)", pattern: Self.room(i, rooms: rooms), since: since, index: i,
                            recorder: recorders[i % recorders.count], ledger: ledger).get())
                        i += lanes
                    }
                    return mine
                }
            }
            var all: [any Channel] = []
            for try await part in group { all += part }
            return all
        }
    }

    /// The latest of a per-client time over every client, or 0 while any is still 0.
    func latest(_ ledgers: [RecoveryLedger], _ times: @escaping @Sendable (RecoveryLedger) -> [UInt64]) async -> UInt64 {
        var latest: UInt64 = 0
        for (k, ledger) in ledgers.enumerated() {
            let values = (try? await ledger.loop.submit { times(ledger) }.get()) ?? []
            for i in stride(from: k, to: values.count, by: ledgers.count) {
                if values[i] == 0 { return 0 }
                latest = max(latest, values[i])
            }
        }
        return latest
    }

    /// Warren's `warren_recover*` counters, summed over their labels.
    func metrics() -> [String: Double] {
        let (_, body) = LoopbackHTTP.get(port: options.warrenPort, "/metrics")
        var sums: [String: Double] = [:]
        for line in body.split(separator: "\n") where line.hasPrefix("warren_recover") {
            let name = line.prefix { $0 != "{" && $0 != " " }
            if let value = line.split(separator: " ").last.flatMap({ Double($0) }) { sums[String(name), default: 0] += value }
        }
        return sums
    }
}
