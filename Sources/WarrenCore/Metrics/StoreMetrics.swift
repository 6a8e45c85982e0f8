import Atomics
import CoreMetrics

/// The conversation store's figures (docs/operations.md, docs/protocol.md): how long a batch takes to commit, how
/// big batches are, how many messages wait in `warren.store`, whether the database answers, and
/// how many messages it would not hold.
public final class StoreMetrics: Sendable {
    private let writeLatency = CoreMetrics.Timer(label: "warren_store_write_seconds")
    private let batchSize = CoreMetrics.Recorder(label: "warren_store_batch_size", aggregate: true)
    private let lagGauge = CoreMetrics.Gauge(label: "warren_store_lag_messages")
    private let upGauge = CoreMetrics.Gauge(label: "warren_store_up")
    private let writtenCounter = CoreMetrics.Counter(label: "warren_store_written_total")
    private let failureCounter = CoreMetrics.Counter(label: "warren_store_write_failures_total")
    private let refusedCounter = CoreMetrics.Counter(label: "warren_store_refused_total")

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
