import Foundation
import NIOCore
import NIOPosix
import WarrenBenchKit

/// `--scenarios publish`: `publishClients` clients, each publishing `publishMessages` messages
/// to a 1:1 conversation of its own (`p<i>.q<i>`), one at a time, each sent once the one
/// before was acknowledged. Every target runs `rounds` times, alternating, on an exchange of
/// its own run, where a plain AMQP consumer bound with `#` checks that every acknowledged
/// message arrived (lost = acknowledged and never seen).
struct PublishBench {
    let options: BenchOptions

    func run() async throws -> [PublishResult] {
        guard let broker = ProcessProbe.broker() else { throw BenchError.broker("no RabbitMQ (beam.smp) process found") }
        let only = Set(options.targets.split(separator: ",").compactMap { PublishTarget(rawValue: String($0)) })
        var results: [PublishResult] = []
        for round in 1...max(1, options.rounds) {
            for target in PublishTarget.allCases where only.isEmpty || only.contains(target) {
                log("publish \(target.rawValue) round \(round): \(options.publishClients) clients × \(options.publishMessages) messages")
                do {
                    let r = try await runOne(target, round: round, broker: broker)
                    log(String(format: "  %.0f msgs/s, ack p50 %.2f ms, p99 %.2f ms, max %.2f ms, acknowledged %d, failed %d, lost %d, CPU µs/publish warren %@ broker %@ bench %@",
                               r.messagesPerSecond, r.ackP50Ms, r.ackP99Ms, r.ackMaxMs, r.acknowledged, r.failed, r.lost,
                               Report.f(r.warrenCPUMicrosPerPublish), Report.f(r.brokerCPUMicrosPerPublish),
                               Report.f(r.benchCPUMicrosPerPublish)) + (r.errors.isEmpty ? "" : ", errors: \(r.errors.prefix(2))"))
                    results.append(r)
                } catch {
                    log("  failed: \(error)")
                }
            }
        }
        return results
    }

    private func runOne(_ target: PublishTarget, round: Int, broker: ProcessProbe) async throws -> PublishResult {
        let clients = options.publishClients, count = options.publishMessages
        let exchange = "bench.publish.\(UInt32.random(in: 0...UInt32.max))"
        let group = MultiThreadedEventLoopGroup.singleton
        let loops = Array(group.makeIterator())
        let recorders = loops.map { Recorder(loop: $0, clients: clients, messages: count, expected: clients * count) }
        let checkRecorder = Recorder(loop: loops[0], clients: 1, messages: clients * count, expected: clients * count)
        let checker = try await PublishChecker.open(url: options.amqpURL, exchange: exchange, recorder: checkRecorder)
        var warren: WarrenProcess?
        if target.usesWarren {
            warren = try WarrenProcess(binary: options.warrenBinary, config: options.config, port: options.warrenPort,
                                       amqpURL: options.amqpURL, exchange: exchange, log: "/tmp/warren-bench-warren.log",
                                       environment: ["WARREN_STORE_ENABLED": "false"])
        }
        defer { warren?.stop() }

        // Connect every client, `lanes` at a time.
        let connectStart = ContinuousClock.now
        let lanes = max(1, min(options.lanes, clients))
        let opened: [(channels: [any Channel], amqp: [AMQPPublishClient])] = try await withThrowingTaskGroup(
            of: ([any Channel], [AMQPPublishClient]).self
        ) { tasks in
            for lane in 0..<lanes {
                tasks.addTask { [options] in
                    var channels: [any Channel] = []
                    var amqp: [AMQPPublishClient] = []
                    var i = lane
                    while i < clients {
                        let recorder = recorders[i % recorders.count]
                        let route = "p\(i).q\(i)"
                        switch target {
                        case .ws:
                            channels.append(try await SocketClient.open(port: options.warrenPort, path: "/v1/ws?user=p\(i)",
                                                                        dialect: .publishWarren(route: route, count: count, firstSeq: i * count),
                                                                        index: i, recorder: recorder).get())
                        case .stomp:
                            channels.append(try await SocketClient.open(port: options.stompPort, path: "/ws",
                                                                        dialect: .publishStomp(destination: "/exchange/\(exchange)/\(route)",
                                                                                               count: count, firstSeq: i * count),
                                                                        index: i, recorder: recorder).get())
                        case .http:
                            channels.append(try await HTTPPublishClient.open(port: options.warrenPort, user: "p\(i)", route: route,
                                                                             count: count, firstSeq: i * count, index: i,
                                                                             recorder: recorder).get())
                        case .amqp:
                            amqp.append(try await AMQPPublishClient.open(url: options.amqpURL, exchange: exchange, routingKey: route,
                                                                         count: count, firstSeq: i * count, index: i,
                                                                         recorder: recorder))
                        }
                        i += lanes
                    }
                    return (channels, amqp)
                }
            }
            var all: [([any Channel], [AMQPPublishClient])] = []
            for try await part in tasks { all.append(part) }
            return all.map { (channels: $0.0, amqp: $0.1) }
        }
        let channels = opened.flatMap(\.channels)
        let amqp = opened.flatMap(\.amqp)
        let connectSeconds = (ContinuousClock.now - connectStart) / .seconds(1)

        let before = (warren: warren?.probe.sample(), broker: broker.sample(), bench: ProcessProbe.current.sample())
        let started = BenchClock.now()
        for channel in channels { channel.pipeline.fireUserInboundEventTriggered(BenchStart()) }
        for client in amqp { client.start() }
        await waitFor(recorders, expected: clients * count)
        let after = (warren: warren?.probe.sample(), broker: broker.sample(), bench: ProcessProbe.current.sample())
        let acks = try await Tally(recorders)
        await waitFor([checkRecorder], expected: acks.unique, stall: 5)
        let seen = try await Tally([checkRecorder])

        for channel in channels { channel.close(promise: nil) }
        for client in amqp { await client.connection.close() }
        await checker.close(exchange: exchange)

        let h = acks.latency
        let ms = { (v: UInt64) in h.totalCount == 0 ? 0 : Double(v) / 1000 }
        let perPublish = { (a: ProcessSample?, b: ProcessSample?) -> Double? in
            guard let a, let b, acks.unique > 0 else { return nil }
            return (b.cpuSeconds - a.cpuSeconds) / Double(acks.unique) * 1e6
        }
        return PublishResult(
            target: target.rawValue, round: round, clients: clients, messagesPerClient: count, connectSeconds: connectSeconds,
            acknowledged: acks.unique, failed: acks.errors.count, errors: Array(acks.errors.prefix(5)),
            messagesPerSecond: acks.lastDelivery > started ? Double(acks.unique) / (Double(acks.lastDelivery - started) / 1e9) : 0,
            ackP50Ms: ms(h.valueAtPercentile(50)), ackP99Ms: ms(h.valueAtPercentile(99)), ackMaxMs: ms(h.max),
            // Every acknowledged message must be on the broker; the checker's unique count is what was.
            delivered: seen.unique, lost: max(0, acks.unique - seen.unique),
            warrenCPUMicrosPerPublish: perPublish(before.warren, after.warren),
            brokerCPUMicrosPerPublish: perPublish(before.broker, after.broker),
            benchCPUMicrosPerPublish: perPublish(before.bench, after.bench))
    }

    /// Waits until the recorders counted `expected` (acknowledgements plus failures), or
    /// nothing new came for `stall` seconds.
    private func waitFor(_ recorders: [Recorder], expected: Int, stall: Int? = nil) async {
        var last = -1
        var still = 0
        while still < (stall ?? options.stallSeconds) * 10 {
            var count = 0
            for r in recorders { count += (try? await r.loop.submit { r.unique + r.errors.count }.get()) ?? 0 }
            if count >= expected { return }
            if count == last { still += 1 } else { still = 0; last = count }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }
}
