import ArgumentParser
import Foundation
import WarrenBenchKit
#if canImport(Glibc)
import Glibc
#endif

/// The bench's settings (every one a command-line option).
struct BenchOptions: ParsableArguments {
    @Option(help: "Scenarios, comma-separated: room, room-paced, inbox, inbox-paced, idle, poll, poll-burst, poll-idle, scale, greedy, inbox-store, history, presence, publish.")
    var scenarios = "room,room-paced,inbox,inbox-paced,idle,poll,poll-burst,poll-idle,scale,greedy"
    @Option(help: "Limit the targets (comma-separated: warren-ws, warren-inbox, warren-poll, web-stomp, amqp, amqp-ack, nchan, nchan-multi; publish: ws-publish, http-publish, stomp-publish, amqp-publish); default: each scenario's own set.")
    var targets = ""
    @Option(help: "Rounds: every message scenario runs its targets this many times, alternating.")
    var rounds = 1
    @Option(help: "Rounds of the idle scenario (slow: thousands of connections, then the broker's clean-up).")
    var idleRounds = 1
    @Option(help: "Where to write the JSON report.")
    var json = "warren-bench.json"

    @Option(help: "The Warren binary (build it with `swift build -c release`).")
    var warrenBinary = ".build/release/warren"
    @Option(help: "Warren's configuration file; the bench overrides listen, auth and limits through the environment.")
    var config = "bridge.toml"
    @Option(help: "The port the bench's Warren listens on.")
    var warrenPort = 18080
    @Option var amqpURL = "amqp://guest:guest@127.0.0.1:5672/%2f"
    @Option(help: "RabbitMQ Web-STOMP's port (path /ws).")
    var stompPort = 15674
    @Option(help: "The port the bench's Nchan (nginx) listens on.")
    var nchanPort = 18090
    @Option var exchange = "chat"

    @Option var roomClients = 100
    @Option var roomMessages = 2000
    @Option(help: "Messages per second in room-paced.")
    var pacedRate = 100
    @Option var pacedMessages = 1000
    @Option var inboxUsers = 1000
    @Option var inboxMessages = 20000
    @Option(help: "Messages per second in inbox-paced (below what every target carries).")
    var inboxPacedRate = 2000
    @Option var inboxPacedMessages = 10000
    @Option(help: "Acked inboxes (warren-inbox, amqp-ack): deliveries acknowledged together, one ack frame (Warren `ids`, AMQP `multiple`) every this many. 1 acks each delivery.")
    var ackEvery = 50
    @Option(help: "Idle socket counts, comma-separated.")
    var idleSockets = "1000,5000,10000"
    @Option(help: "How long idle sockets are held (pings every 10 s).")
    var idleSeconds = 20
    @Option(help: "Idle sockets connect only (no subscription).")
    var idleConnectOnly = false
    @Option var pollClients = 500
    @Option var pollMessages = 400
    @Option(help: "Messages per second in poll.")
    var pollRate = 20
    @Option(help: "Messages in poll-burst (unpaced, to the same room).")
    var pollBurstMessages = 2000
    @Option(help: "Parked long-polls in poll-idle.")
    var pollIdleClients = 15000
    @Option(help: "Clients in scale: inbox WebSocket users, then long-pollers, each given one message of its own.")
    var scaleClients = 15000
    @Option(help: "Messages (at 50/s) in greedy, with and without the greedy clients.")
    var greedyMessages = 500

    @Option(help: "Messages stored before history is measured (history).")
    var historyMessages = 1_000_000
    @Option(help: "Conversations the stored messages are spread over (history).")
    var historyRoutes = 1_000
    @Option(help: "History pages fetched one after another (history).")
    var historyRequests = 2_000

    @Option(help: "Publishing clients, each with a 1:1 conversation of its own (publish).")
    var publishClients = 1_000
    @Option(help: "Messages each publishing client sends, one at a time (publish).")
    var publishMessages = 20
    @Option(help: "Present users, spread over two nodes (presence).")
    var presenceUsers = 10_000
    @Option(help: "Rooms the present users are spread over (presence).")
    var presenceRooms = 100
    @Option(help: "Presence queries timed (presence).")
    var presenceQueries = 2_000

    @Option(help: "Publishes awaiting confirms at once (unpaced scenarios).")
    var window = 256
    @Option(help: "Clients set up concurrently (the connect rate of 10,000 idle sockets is the bench's own below ~256: its clients and Warren share the cores).")
    var lanes = 256
    @Option(help: "Event-loop threads the receiving clients are spread over (one recorder each).")
    var receiveLoops = 2
    @Option(help: "A run ends when nothing new was delivered for this long.")
    var stallSeconds = 10
    @Option(help: "At most this long waiting for the broker to go quiet before each run.")
    var quietSeconds = 60
    @Option var seed: UInt64 = 7

    mutating func validate() throws {
        // Both sides hold at most 100 unacknowledged (Warren's inbox prefetch, amqp-ack's QoS):
        // more than half of it unacked would stall them on the acks, not measure them.
        guard (1...50).contains(ackEvery) else { throw ValidationError("--ack-every must be 1 to 50") }
    }
}

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
        let report = Report(results: results, history: history, presence: presence, publish: publish, options: options)
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
            return [(plan, [.warrenPoll, .nchan, .nchanMulti])]
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

/// A small seeded generator, so every target gets the same message keys.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
