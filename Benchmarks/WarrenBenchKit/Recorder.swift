import Histogram
import NIOCore

/// Counts what every client of one run received: unique deliveries, duplicates, foreign
/// frames and the latency of each delivery in an HDR histogram.
///
/// It lives on the clients' one event loop and is touched only there (every client handler
/// and AMQP consumer sink of a run is on that loop), so recording a delivery takes no lock.
public final class Recorder: @unchecked Sendable {
    public let loop: any EventLoop
    /// Which sequence numbers each client has seen (one bit each), to count loss and duplicates.
    private var seen: [[UInt64]]
    public private(set) var expected: Int
    public private(set) var unique = 0
    public private(set) var duplicates = 0
    public private(set) var unexpected = 0
    public private(set) var errors: [String] = []
    /// Poll answers received (long-polling targets): deliveries / answers is the batch size.
    public var answers = 0
    public private(set) var latency = Histogram<UInt64>(highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: .three)
    public private(set) var firstDelivery: UInt64 = 0
    public private(set) var lastDelivery: UInt64 = 0

    /// `clients` receivers of up to `messages` sequence numbers each; `expected` unique
    /// deliveries in all complete the run (the runner compares ``unique`` with it).
    public init(loop: any EventLoop, clients: Int, messages: Int, expected: Int) {
        self.loop = loop
        self.expected = expected
        seen = Array(repeating: Array(repeating: 0, count: (messages + 63) / 64), count: clients)
    }

    /// One delivery to client `client`; `now` from ``BenchClock``.
    @inline(__always)
    public func record(client: Int, stamp: Stamp?, now: UInt64) {
        guard let stamp, client < seen.count, stamp.seq >= 0, stamp.seq / 64 < seen[client].count else {
            unexpected += 1
            return
        }
        let word = stamp.seq >> 6
        let bit = UInt64(1) << UInt64(stamp.seq & 63)
        if seen[client][word] & bit != 0 {
            duplicates += 1
            return
        }
        seen[client][word] |= bit
        unique += 1
        if firstDelivery == 0 { firstDelivery = now }
        lastDelivery = now
        let micros = now > stamp.sentNanos ? (now - stamp.sentNanos) / 1000 : 0
        _ = latency.record(Swift.min(Swift.max(micros, 1), latency.highestTrackableValue))
    }

    /// How many different messages client `client` received.
    public func received(client: Int) -> Int {
        guard client < seen.count else { return 0 }
        return seen[client].reduce(0) { $0 + $1.nonzeroBitCount }
    }

    /// A protocol error a client saw after it was set up.
    public func error(_ text: String) {
        if errors.count < 20 { errors.append(text) }
    }
}
