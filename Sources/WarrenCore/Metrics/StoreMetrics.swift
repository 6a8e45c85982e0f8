import Atomics
import CoreMetrics

/// The conversation store's figures (docs/operations.md, docs/protocol.md): how long a batch takes to commit, how
/// big batches are, how many messages wait in `warren.store`, whether the database answers, and
/// how many messages it would not hold; and
/// how recoveries on resubscribe went.
public final class StoreMetrics: Sendable {
    private let writeLatency = CoreMetrics.Timer(label: "warren_store_write_seconds")
    private let batchSize = CoreMetrics.Recorder(label: "warren_store_batch_size", aggregate: true)
    private let lagGauge = CoreMetrics.Gauge(label: "warren_store_lag_messages")
    private let upGauge = CoreMetrics.Gauge(label: "warren_store_up")
    private let writtenCounter = CoreMetrics.Counter(label: "warren_store_written_total")
    private let failureCounter = CoreMetrics.Counter(label: "warren_store_write_failures_total")
    private let refusedCounter = CoreMetrics.Counter(label: "warren_store_refused_total")
    private let recoveries = Dictionary(uniqueKeysWithValues: (["recovered"] + RecoveryReason.allCases.map(\.rawValue)).map {
        ($0, CoreMetrics.Counter(label: "warren_recoveries_total", dimensions: [("reason", $0)]))
    })
    private let replayedCounter = CoreMetrics.Counter(label: "warren_recovery_messages_total")
    private let recoveryQueries = CoreMetrics.Counter(label: "warren_recovery_queries_total")

    private let written = ManagedAtomic(0)
    private let lagValue = ManagedAtomic(0)
    private let upValue = ManagedAtomic(0)

    /// Upper bounds for `warren_store_batch_size`.
    public static let batchBuckets: [Double] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]

    public init() {
        lagGauge.record(0)
        upGauge.record(0)
        writtenCounter.increment(by: 0)
        failureCounter.increment(by: 0)
        refusedCounter.increment(by: 0)
        for counter in recoveries.values { counter.increment(by: 0) }
        replayedCounter.increment(by: 0)
        recoveryQueries.increment(by: 0)
    }

    /// A recovery done: its outcome, the messages it found and the store reads it took.
    func recovered(_ recovery: Recovery) {
        recoveries[recovery.failure?.rawValue ?? "recovered"]?.increment()
        replayedCounter.increment(by: recovery.messages.count)
        recoveryQueries.increment(by: recovery.queries)
    }

    func batchWritten(count: Int, nanoseconds: Int64) {
        writeLatency.recordNanoseconds(nanoseconds)
        batchSize.record(count)
        writtenCounter.increment(by: count)
        written.wrappingIncrement(by: count, ordering: .relaxed)
    }

    func writeFailed() { failureCounter.increment() }

    /// A message the database would not hold, given up (acked to RabbitMQ, not kept).
    func refused() { refusedCounter.increment() }

    func lag(_ messages: Int) {
        lagGauge.record(messages)
        lagValue.store(messages, ordering: .relaxed)
    }

    func up(_ up: Bool) {
        upGauge.record(up ? 1 : 0)
        upValue.store(up ? 1 : 0, ordering: .relaxed)
    }

    /// Messages committed by this node so far.
    public var writtenCount: Int { written.load(ordering: .relaxed) }
    /// Messages waiting in `warren.store` at the last look.
    public var lagCount: Int { lagValue.load(ordering: .relaxed) }
    public var isUp: Bool { upValue.load(ordering: .relaxed) == 1 }
}
