import ArgumentParser
import Foundation
import WarrenBenchKit
#if canImport(Glibc)
import Glibc
#endif

@main
struct WarrenBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "warren-bench",
        abstract: "Measures Warren beside RabbitMQ Web-STOMP and plain AMQP on the same broker (BENCHMARKS.md).")

    @OptionGroup var options: BenchOptions

    func run() async throws {
        raiseFileLimit()
        let runner = try Runner(options: options)
        try await runner.start()
        var results: [RunResult] = []
        var history: [HistoryResult] = []
        var presence: [PresenceResult] = []
        var publish: [PublishResult] = []
        var recover: [RecoverResult] = []
        let only = Set(options.targets.split(separator: ",").compactMap { Target(rawValue: String($0)) })
        for scenario in options.scenarios.split(separator: ",").map(String.init) {
            if scenario == "presence" {
                do { presence.append(try await PresenceBench(options: options).run()) } catch { log("  presence failed: \(error)") }
                continue
            }
            if scenario == "publish" {
                do { publish += try await PublishBench(options: options).run() } catch { log("  publish failed: \(error)") }
                continue
            }
            if scenario == "recover" {
                do { recover += try await RecoverBench(options: options, runner: runner).run() } catch { log("  recover failed: \(error)") }
                continue
            }
            if scenario == "history" {
                do { history += try await HistoryBench(options: options).run() } catch { log("  history failed: \(error)") }
                continue
            }
            for (index, plan) in plans(scenario, room: "room.bench").enumerated() {
                for round in 1...max(1, ["idle", "poll-idle", "scale"].contains(scenario) ? options.idleRounds : options.rounds) {
                    for target in plan.targets where only.isEmpty || only.contains(target) {
                        // Each run gets a room of its own: poll sessions are durable queues that
                        // stay bound (until `x-expires`) after their pollers went, and must not
                        // receive the next run's messages.
                        let room = "room.bench.\(UInt32.random(in: 0...UInt32.max))"
                        var p = plans(scenario, room: room)[index].plan
                        p.target = target
                        log("\(p.scenario) \(target.rawValue) round \(round): \(p.clients) clients, \(p.keys.count) messages")
                        do {
                            let r = try await runner.run(p, round: round)
                            log("  " + Report.line(r))
                            results.append(r)
                        } catch {
                            log("  failed: \(error)")
                        }
                    }
                }
            }
        }
        await runner.shutdown()
        let report = Report(results: results, history: history, presence: presence, publish: publish, recover: recover, options: options)
        print(report.table())
        try report.json().write(to: URL(fileURLWithPath: options.json))
        log("JSON written to \(options.json)")
    }

    /// The runs of one scenario, with the targets each is measured on.
    func plans(_ scenario: String, room: String) -> [(plan: RunPlan, targets: [Target])] {
        let o = options
        switch scenario {
        case "room", "room-paced":
            let paced = scenario == "room-paced"
            let m = paced ? o.pacedMessages : o.roomMessages
            let plan = RunPlan(scenario: scenario, target: .warrenWS, clients: o.roomClients,
                               keys: Array(repeating: room, count: m), expected: o.roomClients * m,
                               pattern: { _ in room }, rate: paced ? o.pacedRate : nil)
            return [(plan, [.warrenWS, .stomp, .amqp])]
        case "inbox", "inbox-paced":
            let paced = scenario == "inbox-paced"
            let count = paced ? o.inboxPacedMessages : o.inboxMessages
            var rng = SplitMix(seed: o.seed)
            var keys: [String] = []
            keys.reserveCapacity(count)
            for _ in 0..<count {
                var users: [Int] = []
                while users.count < 3 {
                    let u = Int(rng.next() % UInt64(o.inboxUsers))
                    if !users.contains(u) { users.append(u) }
                }
                keys.append("dm." + users.map { "b\($0)" }.joined(separator: "."))
            }
            let plan = RunPlan(scenario: scenario, target: .warrenWS, clients: o.inboxUsers, keys: keys,
                               expected: 3 * count, pattern: { "#.b\($0).#" }, rate: paced ? o.inboxPacedRate : nil)
            return [(plan, [.warrenWS, .warrenInbox, .stomp, .amqp, .amqpAck])]
        case "inbox-store":
            // The inbox scenario with the conversation store off, on SQLite and on PostgreSQL:
            // what keeping every message costs the live path, and whether the store keeps up.
            guard var plan = plans("inbox", room: room).first?.plan else { return [] }
            return StoreMode.allCases.map { mode in
                plan.scenario = "inbox-store-\(mode.rawValue)"
                plan.store = mode
                return (plan, [.warrenInbox])
            }
        case "idle":
            return o.idleSockets.split(separator: ",").compactMap { Int($0) }.map { n in
                var plan = RunPlan(scenario: "idle", target: .warrenWS, clients: n, keys: [], expected: 0,
                                   pattern: { "#.b\($0).#" }, rate: nil)
                plan.idleSeconds = o.idleSeconds
                plan.connectOnly = o.idleConnectOnly
                return (plan, [.warrenWS, .stomp])
            }
        case "poll", "poll-burst":
            let burst = scenario == "poll-burst"
            let m = burst ? o.pollBurstMessages : o.pollMessages
            var plan = RunPlan(scenario: scenario, target: .warrenPoll, clients: o.pollClients,
                               keys: Array(repeating: room, count: m),
                               expected: o.pollClients * m, pattern: { _ in room }, rate: burst ? nil : o.pollRate)
            plan.channel = { _ in room }
            return [(plan, pollDoors + [.nchan, .nchanMulti])]
        case "sse":
            // The poll scenario's load on Server-Sent Events: Warren's SSE door beside its
            // long-polling, its WebSockets (the same way in through the broker, another door)
            // and Nchan's eventsource subscribers.
            guard var plan = plans("poll", room: room).first?.plan else { return [] }
            plan.scenario = "sse"
            return [(plan, [.warrenSSE, .warrenPoll, .warrenWS, .nchanSSE])]
        case "poll-idle":
            var plan = RunPlan(scenario: scenario, target: .warrenPoll, clients: o.pollIdleClients, keys: [], expected: 0,
                               pattern: { "#.b\($0).#" }, rate: nil)
            plan.channel = { "u.b\($0)" }
            plan.idleSeconds = o.idleSeconds
            return [(plan, [.warrenPoll, .nchan])]
        case "greedy":
            // Two ordinary sockets' latency at a calm rate, with Warren's limits on: once alone
            // ("greedy-calm"), once beside a flooder, a subscription hoarder, a socket that
            // never reads and a connection storm ("greedy"). The ratio is the measurement.
            var calm = RunPlan(scenario: "greedy-calm", target: .warrenWS, clients: 2,
                               keys: Array(repeating: room, count: o.greedyMessages), expected: 2 * o.greedyMessages,
                               pattern: { _ in room }, rate: 50)
            calm.limited = true
            var greedy = calm
            greedy.scenario = "greedy"
            greedy.abusers = true
            return [(calm, [.warrenWS]), (greedy, [.warrenWS])]
        case "scale":
            // Every client a message of its own: user i's key is u.b<i> (Warren's pattern #.b<i>.#,
            // Nchan's channel u.b<i>).
            let n = o.scaleClients
            var plan = RunPlan(scenario: scenario, target: .warrenInbox, clients: n, keys: (0..<n).map { "u.b\($0)" },
                               expected: n, pattern: { "#.b\($0).#" }, rate: nil)
            plan.channel = { "u.b\($0)" }
            return [(plan, [.warrenInbox, .warrenPoll, .nchan])]
        default:
            log("unknown scenario \(scenario)")
            return []
        }
    }

    /// Warren's long-polling targets: both doors, and another build when one is given.
    var pollDoors: [Target] {
        [.warrenPoll, .warrenPollNIO] + (options.baselineWarren == nil ? [] : [.warrenPollBase])
    }

    /// Thousands of sockets need more than the usual 1,024 descriptors (the Warren the bench
    /// starts inherits the limit).
    func raiseFileLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}

func log(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
