import Foundation
import Histogram
import Logging
import NIOPosix
import WarrenBenchKit
import WarrenCore
import WarrenStore

/// One history measurement: a store of `stored` messages, `requests` pages of 50 fetched one
/// after another over HTTP from the Warren serving it.
struct HistoryResult: Codable {
    var backend: String
    var stored: Int
    var fillSeconds: Double
    var requests: Int
    var p50Ms: Double
    var p99Ms: Double
    var maxMs: Double
    var errors: Int
}

/// `--scenarios history`: fills a fresh store (SQLite, then PostgreSQL) with `historyMessages`
/// messages over `historyRoutes` conversations straight through the store's own writer API, starts
/// Warren on it, and times `GET /v1/history` pages (50 messages; a quarter the newest page, the
/// rest before a random kept id) one after another.
struct HistoryBench {
    let options: BenchOptions

    func run() async throws -> [HistoryResult] {
        var results: [HistoryResult] = []
        for mode in [StoreMode.sqlite, .postgres] {
            let database = try StoreSetup.freshDatabase(mode, name: "warren_bench_history")
            let url = mode == .sqlite ? "sqlite://\(database)" : StoreSetup.postgresURL(database)
            log("history \(mode.rawValue): filling \(options.historyMessages) messages over \(options.historyRoutes) routes")
            let fillStart = ContinuousClock.now
            let samples = try await fill(url: url)
            let fill = ContinuousClock.now - fillStart
            let queue = "bench.store.\(UInt32.random(in: 0...UInt32.max))"
            let warren = try WarrenProcess(binary: options.warrenBinary, config: options.config, port: options.warrenPort,
                                           amqpURL: options.amqpURL, exchange: options.exchange, log: "/tmp/warren-bench-warren.log",
                                           environment: mode.environment(database: database, queue: queue))
            defer { warren.stop() }
            var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)
            var errors = 0
            var rng = SplitMix(seed: options.seed)
            for n in 0..<options.historyRequests {
                let r = Int(rng.next() % UInt64(options.historyRoutes))
                var target = "/v1/history?user=h\(r)&route=\(Self.route(r))&limit=50"
                if n % 4 != 0, let ids = samples[r], !ids.isEmpty { target += "&before=\(ids[Int(rng.next() % UInt64(ids.count))])" }
                let start = BenchClock.now()
                let (status, body) = LoopbackHTTP.get(port: options.warrenPort, target)
                let micros = (BenchClock.now() - start) / 1000
                if status != 200 || !body.contains("\"messages\":[") { errors += 1 } else { histogram.record(micros) }
            }
            try? await Task.sleep(for: .milliseconds(10))
            warren.stop()
            try? await deleteQueue(queue)
            results.append(HistoryResult(backend: mode.rawValue, stored: options.historyMessages,
                                         fillSeconds: Double(fill.components.seconds), requests: options.historyRequests,
                                         p50Ms: Double(histogram.valueAtPercentile(50)) / 1000,
                                         p99Ms: Double(histogram.valueAtPercentile(99)) / 1000,
                                         maxMs: Double(histogram.max) / 1000, errors: errors))
            log(String(format: "  history %@: p50 %.2f ms, p99 %.2f ms, max %.2f ms, %d errors", mode.rawValue,
                       results.last!.p50Ms, results.last!.p99Ms, results.last!.maxMs, errors))
        }
        return results
    }

    static func route(_ r: Int) -> String { "dm.h\(r).g\(r % 97)" }

    /// Deletes the run's store queue: durable and bound with `#`, it would keep every later
    /// run's messages.
    func deleteQueue(_ queue: String) async throws {
        let publisher = try await BenchPublisher.open(url: options.amqpURL, exchange: options.exchange, loop: MultiThreadedEventLoopGroup.singleton.next())
        _ = try? await publisher.deleteQueue(queue)
        await publisher.close()
    }

    /// Writes the messages in batches of 5,000; returns every 100th id of each route (for `before`).
    func fill(url: String) async throws -> [Int: [String]] {
        var settings = StoreSettings()
        settings.url = url
        var logger = Logger(label: "warren-bench.store")
        logger.logLevel = .warning
        let store = try await StoreBackends.open(settings, logger: logger)
        let ids = UUIDv7Generator()
        var samples: [Int: [String]] = [:]
        var batch: [StoredMessage] = []
        batch.reserveCapacity(5_000)
        let start = UInt64(Date().timeIntervalSince1970 * 1000) - UInt64(options.historyMessages)
        for n in 0..<options.historyMessages {
            let r = n % options.historyRoutes
            let route = Self.route(r)
            let ms = start + UInt64(n)
            let id = ids.next(nowMilliseconds: ms)
            let sender = n % 2 == 0 ? "h\(r)" : "g\(r % 97)"
            let envelope = #"{"v":1,"id":"\#(id)","route":"\#(route)","type":"text","from":"\#(sender)","via":"ws","ts":\#(ms),"body":"message \#(n) of the history benchmark"}"#
            batch.append(StoredMessage(id: id, route: route, sender: sender, type: "text", ts: Int64(ms), envelope: envelope,
                                       sortKey: SortKey.of(id: id, storedAt: Int64(ms))))
            if n % 100 == r % 100 { samples[r, default: []].append(id) }
            if batch.count == 5_000 {
                try await store.write(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        if !batch.isEmpty { try await store.write(batch) }
        await store.close()
        return samples
    }
}
