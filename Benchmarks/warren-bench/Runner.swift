import AMQPClient
import Foundation
import NIOCore
import NIOPosix
import WarrenBenchKit

/// Runs plans against targets on event loops of their own: the receiving clients spread over
/// `options.receiveLoops` loops (client `i` on loop `i % n`, each loop with its own recorder,
/// so recording takes no lock; one receiving thread could not keep up with Warren in `inbox`
/// on a loaded machine and the bench would time itself), and one for the publisher. Driven by
/// one task at a time (runs never overlap).
final class Runner: @unchecked Sendable {
    let options: BenchOptions
    let clientGroup: MultiThreadedEventLoopGroup
    let publisherGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let broker: ProcessProbe
    var publisher: BenchPublisher!

    init(options: BenchOptions) throws {
        self.options = options
        clientGroup = MultiThreadedEventLoopGroup(numberOfThreads: max(1, options.receiveLoops))
        guard let broker = ProcessProbe.broker() else { throw BenchError.broker("no RabbitMQ (beam.smp) process found") }
        self.broker = broker
    }

    func start() async throws {
        publisher = try await BenchPublisher.open(url: options.amqpURL, exchange: options.exchange, loop: publisherGroup.next())
    }

    func shutdown() async {
        await publisher?.close()
        try? await clientGroup.shutdownGracefully()
        try? await publisherGroup.shutdownGracefully()
    }

    func snapshot(_ warren: (any MeasuredServer)?) -> Snapshot {
        Snapshot(warren: warren?.probe.sample(), broker: broker.sample(), bench: ProcessProbe.current.sample())
    }

    /// Waits until the broker's CPU use falls under 5 % for two seconds in a row (after
    /// thousands of connections close it works for tens of seconds), at most `limit` seconds.
    func waitForQuietBroker(limit: Int) {
        var calm = 0
        var last = broker.sample()?.cpuSeconds ?? 0
        for _ in 0..<limit {
            Thread.sleep(forTimeInterval: 1)
            let now = broker.sample()?.cpuSeconds ?? 0
            calm = now - last < 0.05 ? calm + 1 : 0
            last = now
            if calm >= 2 { return }
        }
    }

    func run(_ plan: RunPlan, round: Int) async throws -> RunResult {
        waitForQuietBroker(limit: options.quietSeconds)
        let messages = plan.keys.count
        let recorders = clientGroup.makeIterator().map {
            Recorder(loop: $0, clients: plan.clients, messages: max(messages, 1), expected: plan.expected)
        }
        let loop = recorders[0].loop
        var warren: (any MeasuredServer)?
        let storeQueue = "bench.store.\(UInt32.random(in: 0...UInt32.max))"
        if plan.target.usesWarren {
            var environment = plan.limited ? Self.greedyLimits : [:]
            let database = try StoreSetup.freshDatabase(plan.store, name: "warren_bench_\(plan.store.rawValue)")
            environment.merge(plan.store.environment(database: database, queue: storeQueue)) { $1 }
            if plan.target == .warrenPollNIO { environment["WARREN_HTTP_POLL_DOOR"] = "nio" }
            let base = plan.target == .warrenPollBase
            let binary = base ? (options.baselineWarren ?? options.warrenBinary) : options.warrenBinary
            let config = base ? (options.baselineConfig ?? options.config) : options.config
            warren = try WarrenProcess(binary: binary, config: config, port: options.warrenPort,
                                       amqpURL: options.amqpURL, exchange: options.exchange,
                                       log: "/tmp/warren-bench-warren.log", environment: environment)
        } else if plan.target.usesNchan {
            warren = try NchanServer(port: options.nchanPort, log: "/tmp/warren-bench-nchan.log")
        }
        defer { warren?.stop() }
        if plan.target == .warrenInbox { await deleteInboxes(plan.clients) }

        let before = snapshot(warren)
        let connectStart = BenchClock.now()
        let clients = try await connect(plan, recorders: recorders)
        let connectSeconds = Double(BenchClock.now() - connectStart) / 1e9
        let connected = snapshot(warren)

        let abuse = plan.abusers ? try await startAbuse(plan, loop: clientGroup.next()) : nil
        var outcome: BenchPublisher.Outcome?
        var during = connected
        var pinger: RepeatedTask?
        let lag = plan.store == .off || !plan.target.usesWarren ? nil
            : try await StoreLagProbe.start(url: options.amqpURL, queue: storeQueue)
        var storeDrainSeconds: Double?
        if !plan.keys.isEmpty {
            if plan.target.usesNchan {
                outcome = try await NchanPublisher(port: options.nchanPort, loop: publisherGroup.next())
                    .run(keys: plan.keys, window: options.window, rate: plan.rate)
            } else {
                outcome = try await publisher.run(keys: plan.keys, window: options.window, rate: plan.rate).get()
            }
            await waitForDeliveries(recorders)
            during = snapshot(warren)
            storeDrainSeconds = await lag?.finish()
        } else {
            let sockets = plan.target.usesWebSockets ? clients.sockets : []
            pinger = loop.scheduleRepeatedTask(initialDelay: .seconds(10), delay: .seconds(10)) { _ in
                for channel in sockets { SocketClient.ping(channel) }
            }
            try await Task.sleep(for: .seconds(plan.idleSeconds))
            during = snapshot(warren)
        }
        pinger?.cancel()
        await abuse?.stop()

        await clients.close()
        let after = snapshot(warren)
        if plan.target == .warrenInbox { await deleteInboxes(plan.clients) }
        if plan.store != .off, plan.target.usesWarren {
            // Durable and bound with `#`: left, it would keep every later run's messages.
            warren?.stop()
            _ = try? await publisher.deleteQueue(storeQueue)
        }

        var r = result(plan, round: round, tally: try await Tally(recorders), outcome: outcome, connectSeconds: connectSeconds,
                       before: before, connected: connected, during: during, after: after)
        if let lag {
            r.storeLagMax = lag.maximum
            r.storeDrainSeconds = storeDrainSeconds
        }
        return r
    }

    // MARK: greedy clients

    /// The limits of the greedy runs (the same for the calm run they are compared with).
    static let greedyLimits = ["WARREN_LIMITS_MAX_CONNECTIONS_PER_USER": "20", "WARREN_LIMITS_PUBLISH_RATE": "50",
                               "WARREN_LIMITS_OUTBOUND_BUFFER_BYTES": "65536"]

    func startAbuse(_ plan: RunPlan, loop: any EventLoop) async throws -> Abuse {
        let abuse = Abuse()
        // Their own recorder: what they are told does not count in the measured clients'.
        let scratch = Recorder(loop: loop, clients: 1, messages: 1, expected: 0)
        let port = options.warrenPort
        @Sendable func open(_ user: String, _ dialect: SocketDialect) -> EventLoopFuture<any Channel> {
            SocketClient.open(port: port, path: "/v1/ws?user=\(user)", dialect: dialect, index: 0, recorder: scratch)
        }
        abuse.channels.append(try await open("flood", .flood(route: "room.flood", perTick: 10)).get())   // 1,000 a second; its rate is 50
        abuse.channels.append(try await open("hoard", .hoard(subscriptions: 10_000)).get())             // its limit is 100
        let sleepy = try await open("sleepy", .warren(pattern: plan.pattern(0), ackEvery: nil)).get()  // subscribed, never reads
        try await sleepy.setOption(ChannelOptions.autoRead, value: false).get()
        abuse.channels.append(sleepy)
        for _ in 0..<20 { abuse.channels.append(try await open("storm", .idleWarren).get()) }
        abuse.storm = loop.scheduleRepeatedTask(initialDelay: .milliseconds(20), delay: .milliseconds(20)) { _ in
            for _ in 0..<5 { _ = open("storm", .idleWarren) }   // refused: over its 20 connections
        }
        return abuse
    }

    // MARK: clients

    struct Clients: Sendable {
        var sockets: [any Channel] = []
        var consumers: [PlainConsumer] = []

        func close() async {
            for channel in sockets { channel.close(promise: nil) }
            for channel in sockets { try? await channel.closeFuture.get() }
            for consumer in consumers { await consumer.connection.close() }
        }
    }

    /// Sets up every client, `options.lanes` at a time.
    func connect(_ plan: RunPlan, recorders: [Recorder]) async throws -> Clients {
        let lanes = max(1, min(options.lanes, plan.clients))
        return try await withThrowingTaskGroup(of: Clients.self) { group in
            for lane in 0..<lanes {
                group.addTask { [self] in
                    var mine = Clients()
                    var i = lane
                    while i < plan.clients {
                        try await open(plan, index: i, recorder: recorders[i % recorders.count], into: &mine)
                        i += lanes
                    }
                    return mine
                }
            }
            var all = Clients()
            for try await part in group {
                all.sockets += part.sockets
                all.consumers += part.consumers
            }
            return all
        }
    }

    func open(_ plan: RunPlan, index: Int, recorder: Recorder, into clients: inout Clients) async throws {
        let pattern = plan.pattern(index)
        switch plan.target {
        case .warrenWS, .warrenInbox:
            let inbox = plan.target == .warrenInbox
            let user = "b\(index)"
            let dialect: SocketDialect = plan.connectOnly ? .idleWarren : .warren(pattern: pattern, ackEvery: inbox ? options.ackEvery : nil)
            let path = "/v1/ws?user=\(user)" + (inbox ? "&device=bench" : "")
            clients.sockets.append(try await SocketClient.open(port: options.warrenPort, path: path,
                                                               dialect: dialect, index: index, recorder: recorder).get())
        case .stomp:
            let dialect: SocketDialect = plan.connectOnly ? .idleStomp : .stomp(destination: "/exchange/\(options.exchange)/\(pattern)")
            clients.sockets.append(try await SocketClient.open(port: options.stompPort, path: "/ws",
                                                               dialect: dialect, index: index, recorder: recorder).get())
        case .warrenPoll, .warrenPollNIO, .warrenPollBase:
            clients.sockets.append(try await PollClient.open(port: options.warrenPort, user: "b\(index)",
                                                             pattern: pattern, wait: 25, index: index, recorder: recorder).get())
        case .warrenSSE:
            clients.sockets.append(try await EventStreamClient.open(port: options.warrenPort, path: "/v1/sse?user=b\(index)&pattern=\(pattern)",
                                                                    ready: .subscribedEvent, index: index, recorder: recorder).get())
        case .nchanSSE:
            clients.sockets.append(try await EventStreamClient.open(port: options.nchanPort, path: "/es/\(plan.channel(index))",
                                                                    ready: .head, index: index, recorder: recorder).get())
        case .nchan, .nchanMulti:
            clients.sockets.append(try await NchanPollClient.open(port: options.nchanPort, channel: plan.channel(index),
                                                                  multi: plan.target == .nchanMulti, index: index,
                                                                  recorder: recorder).get())
        case .amqp, .amqpAck:
            clients.consumers.append(try await PlainConsumer.open(url: options.amqpURL, exchange: options.exchange,
                                                                  pattern: pattern, index: index, recorder: recorder,
                                                                  prefetch: plan.target == .amqpAck ? 100 : nil,
                                                                  ackEvery: options.ackEvery))
        }
    }

    /// Waits for every expected delivery, or until nothing new arrived for `options.stallSeconds`.
    func waitForDeliveries(_ recorders: [Recorder]) async {
        var lastCount = -1
        var stalled = 0
        while stalled < options.stallSeconds * 10 {
            var count = 0
            for recorder in recorders {
                count += (try? await recorder.loop.submit { recorder.unique }.get()) ?? 0
            }
            if count >= recorders[0].expected { break }
            if count == lastCount { stalled += 1 } else { stalled = 0; lastCount = count }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Warren's inbox queues of the bench users (durable: they would outlive the run).
    func deleteInboxes(_ count: Int) async {
        for i in 0..<count {
            _ = try? await publisher.deleteQueue("warren.inbox.b\(i).bench")
        }
    }

    // MARK: result

    func result(_ plan: RunPlan, round: Int, tally: Tally, outcome: BenchPublisher.Outcome?, connectSeconds: Double,
                before: Snapshot, connected: Snapshot, during: Snapshot, after: Snapshot) -> RunResult {
        let h = tally.latency
        let ms = { (v: UInt64) in h.totalCount == 0 ? 0 : Double(v) / 1000 }
        var r = RunResult(
            scenario: plan.scenario, target: plan.target.rawValue, round: round, clients: plan.clients,
            messages: plan.keys.count, connectSeconds: connectSeconds,
            connectionsPerSecond: connectSeconds > 0 ? Double(plan.clients) / connectSeconds : 0,
            expected: plan.expected, delivered: tally.unique, lost: max(0, plan.expected - tally.unique),
            duplicates: tally.duplicates, unexpected: tally.unexpected, errors: tally.errors,
            deliveriesPerSecond: 0, publishFailures: outcome?.failed ?? 0, pollAnswers: tally.answers,
            latencyP50Ms: ms(h.valueAtPercentile(50)), latencyP99Ms: ms(h.valueAtPercentile(99)), latencyMaxMs: ms(h.max),
            before: before, connected: connected, during: during, after: after)
        if let outcome, tally.lastDelivery > outcome.started {
            r.deliveriesPerSecond = Double(tally.unique) / (Double(tally.lastDelivery - outcome.started) / 1e9)
        }
        let cpu = { (a: ProcessSample?, b: ProcessSample?) -> Double? in
            guard let a, let b, tally.unique > 0 else { return nil }
            return (b.cpuSeconds - a.cpuSeconds) / Double(tally.unique) * 1e6
        }
        if outcome != nil {
            r.warrenCPUMicrosPerDelivery = cpu(connected.warren, during.warren)
            if tally.answers > 0, let a = connected.warren, let b = during.warren {
                r.warrenCPUMicrosPerAnswer = (b.cpuSeconds - a.cpuSeconds) / Double(tally.answers) * 1e6
            }
            r.brokerCPUMicrosPerDelivery = cpu(connected.broker, during.broker)
            r.benchCPUMicrosPerDelivery = cpu(connected.bench, during.bench)
        } else if plan.clients > 0 {
            let n = Double(plan.clients)
            if let a = before.warren, let b = during.warren { r.warrenRSSPerConnection = Double(b.rssBytes - a.rssBytes) / n }
            if let a = before.broker, let b = during.broker { r.brokerRSSPerConnection = Double(b.rssBytes - a.rssBytes) / n }
            let seconds = Double(max(plan.idleSeconds, 1))
            if let a = connected.warren, let b = during.warren { r.warrenIdleCPU = (b.cpuSeconds - a.cpuSeconds) / seconds }
            if let a = connected.broker, let b = during.broker { r.brokerIdleCPU = (b.cpuSeconds - a.cpuSeconds) / seconds }
        }
        return r
    }
}
