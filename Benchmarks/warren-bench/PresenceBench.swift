import AMQPClient
import Foundation
import Histogram
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import WarrenBenchKit

/// `--scenarios presence`: two Warren nodes, `presenceUsers` WebSockets spread over them, each
/// present in one of `presenceRooms` rooms; once every node sees everyone, `GET /v1/presence`
/// is timed on both nodes in turn, then everything rests for `idleSeconds` while the bench
/// counts what crosses the presence exchange and samples the nodes' CPU.
struct PresenceBench {
    let options: BenchOptions

    static func room(_ i: Int, rooms: Int) -> String { "room.pres\(i % rooms)" }

    func run() async throws -> PresenceResult {
        let users = options.presenceUsers, rooms = options.presenceRooms
        var nodes: [WarrenProcess] = []
        defer { for n in nodes { n.stop() } }
        for (k, name) in ["bench-a", "bench-b"].enumerated() {
            nodes.append(try WarrenProcess(binary: options.warrenBinary, config: options.config, port: options.warrenPort + k,
                                           amqpURL: options.amqpURL, exchange: options.exchange,
                                           log: "/tmp/warren-bench-warren-\(name).log",
                                           environment: ["WARREN_NODE_ID": name, "WARREN_STORE_ENABLED": "false"]))
        }
        // The clients' loops: the process-wide ones (they live as long as the bench).
        let group = MultiThreadedEventLoopGroup.singleton
        let recorder = Recorder(loop: group.next(), clients: users, messages: 1, expected: 0)
        log("presence: \(users) users over \(rooms) rooms on \(nodes.count) nodes")
        let setupStart = ContinuousClock.now
        let lanes = max(1, min(options.lanes, users))
        let channels: [any Channel] = try await withThrowingTaskGroup(of: [any Channel].self) { tasks in
            for lane in 0..<lanes {
                tasks.addTask {
                    var mine: [any Channel] = []
                    var i = lane
                    while i < users {
                        let port = options.warrenPort + i % 2
                        mine.append(try await SocketClient.open(port: port, path: "/v1/ws?user=pu\(i)",
                                                                dialect: .presence(route: Self.room(i, rooms: rooms)), index: i,
                                                                recorder: recorder).get())
                        i += lanes
                    }
                    return mine
                }
            }
            var all: [any Channel] = []
            for try await part in tasks { all += part }
            return all
        }
        // Both nodes see everyone (the other node's users arrive by announcements).
        for k in 0..<nodes.count {
            var seen = 0
            for _ in 0..<600 {
                seen = 0
                for r in 0..<rooms {
                    let (status, body) = LoopbackHTTP.get(port: options.warrenPort + k, "/v1/presence?user=pu0&route=\(Self.room(r, rooms: rooms))")
                    if status == 200 { seen += body.components(separatedBy: "\"pu").count - 1 }
                }
                if seen >= users { break }
                try await Task.sleep(for: .milliseconds(500))
            }
            log("  node \(k) sees \(seen) present users")
        }
        let setup = ContinuousClock.now - setupStart

        var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
        var errors = 0
        for n in 0..<options.presenceQueries {
            let target = "/v1/presence?user=pu\(n % users)&route=\(Self.room(n, rooms: rooms))"
            let start = BenchClock.now()
            let (status, body) = LoopbackHTTP.get(port: options.warrenPort + n % 2, target)
            let micros = (BenchClock.now() - start) / 1000
            if status == 200, body.contains("\"users\":[") { histogram.record(micros) } else { errors += 1 }
        }

        // At rest: what crosses the presence exchange, and what the nodes spend.
        let counter = try await PresenceTrafficCounter.start(url: options.amqpURL, exchange: "\(options.exchange).presence")
        let before = nodes.map { $0.probe.sample() }
        try await Task.sleep(for: .seconds(options.idleSeconds))
        let after = nodes.map { $0.probe.sample() }
        let (messages, bytes) = await counter.stop()
        for channel in channels { try? await channel.close() }
        let seconds = Double(options.idleSeconds)
        let result = PresenceResult(
            users: users, rooms: rooms, nodes: nodes.count,
            setupSeconds: Double(setup.components.seconds), queries: options.presenceQueries,
            queryP50Ms: Double(histogram.valueAtPercentile(50)) / 1000, queryP99Ms: Double(histogram.valueAtPercentile(99)) / 1000,
            queryMaxMs: Double(histogram.max) / 1000, queryErrors: errors, restSeconds: options.idleSeconds,
            restMessagesPerSecond: Double(messages) / seconds, restBytesPerSecond: Double(bytes) / seconds,
            nodeIdleCPU: zip(before, after).map { b, a in ((a?.cpuSeconds ?? 0) - (b?.cpuSeconds ?? 0)) / seconds },
            nodeRSSMiB: after.map { Double($0?.rssBytes ?? 0) / 1_048_576 })
        log(String(format: "  presence: query p50 %.2f ms, p99 %.2f ms, %d errors; at rest %.2f announcements/s (%.0f B/s), node CPU %@",
                   result.queryP50Ms, result.queryP99Ms, errors, result.restMessagesPerSecond, result.restBytesPerSecond,
                   result.nodeIdleCPU.map { String(format: "%.4f", $0) }.joined(separator: " / ")))
        return result
    }
}
