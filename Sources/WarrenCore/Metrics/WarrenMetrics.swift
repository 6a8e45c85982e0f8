import Atomics
import CoreMetrics
import NIOConcurrencyHelpers
import Prometheus

/// Warren's metrics (DESIGN §7): Prometheus through swift-metrics, and the same figures as
/// plain numbers for `/v1/stats` and the dashboard.
///
/// Every handle is made once at start for every label combination (route classes are a
/// bounded set from `[[route]]`), so the per-message cost is an array index and atomic
/// adds — no label strings are built per message.
public final class WarrenMetrics: Sendable {
    public let classifier: RouteClassifier
    /// The registry `/metrics` renders (nil when metrics go elsewhere, as in unit tests).
    public let registry: PrometheusCollectorRegistry?
    let classes: [String]

    // swift-metrics handles
    private let messages: [CoreMetrics.Counter]          // [class][frontend][direction]
    private let bytes: [CoreMetrics.Counter]
    private let drops: [CoreMetrics.Counter]             // [class][reason]
    private let deliveryLatency: [CoreMetrics.Timer]     // [class]
    private let confirmLatency: [CoreMetrics.Timer]
    private let connectionGauges: [CoreMetrics.Gauge]    // [frontend]
    private let subscriptionGauges: [CoreMetrics.Gauge]  // [mode]
    private let presenceGauges: [CoreMetrics.Gauge]      // [class]
    private let presenceCounts: [ManagedAtomic<Int>]
    private let amqpUpGauge: CoreMetrics.Gauge
    private let reconnectCounter: CoreMetrics.Counter
    private let limitHits: [CoreMetrics.Counter]         // [frontend][reason]
    private let authFailures: [CoreMetrics.Counter]      // [reason]

    // the same, readable
    private let messageCounts: [ManagedAtomic<Int>]
    private let byteCounts: [ManagedAtomic<Int>]
    private let dropCounts: [ManagedAtomic<Int>]
    private let latencyBuckets: [ManagedAtomic<Int>]     // [class][bucket]
    private let confirmBuckets: [ManagedAtomic<Int>]
    private let connectionCounts: [ManagedAtomic<Int>]
    private let subscriptionCounts: [ManagedAtomic<Int>]
    private let amqpUpValue = ManagedAtomic<Int>(0)
    private let reconnects = ManagedAtomic<Int>(0)
    private let limitHitCounts: [ManagedAtomic<Int>]
    private let authFailureCounts: [ManagedAtomic<Int>]
    /// For each of the classifier's classes, the index of its label in `classes`.
    private let labelOfClass: [Int]

    /// Upper bounds of the latency histograms, in seconds.
    public static let buckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    /// The longest delivery latency recorded (a day); anything longer is recorded as this.
    static let longestLatency: Double = 86_400
    public static let durationBuckets: [Duration] = buckets.map { .nanoseconds(Int64($0 * 1e9)) }

    public init(classifier: RouteClassifier, registry: PrometheusCollectorRegistry?) {
        self.classifier = classifier
        self.registry = registry
        let classes = classifier.labels
        self.classes = classes
        self.labelOfClass = classifier.classes.map { c in classes.firstIndex(of: c.name) ?? classes.count - 1 }
        var messages: [CoreMetrics.Counter] = [], bytes: [CoreMetrics.Counter] = []
        for c in classes {
            for f in Frontend.allCases {
                for d in Direction.allCases {
                    let dims = [("route", c), ("frontend", f.label), ("direction", d.label)]
                    messages.append(CoreMetrics.Counter(label: "warren_messages_total", dimensions: dims))
                    bytes.append(CoreMetrics.Counter(label: "warren_message_bytes_total", dimensions: dims))
                }
            }
        }
        self.messages = messages
        self.bytes = bytes
        self.drops = classes.flatMap { c in
            DropReason.allCases.map { CoreMetrics.Counter(label: "warren_dropped_total", dimensions: [("route", c), ("reason", $0.label)]) }
        }
        self.deliveryLatency = classes.map { CoreMetrics.Timer(label: "warren_delivery_latency_seconds", dimensions: [("route", $0)]) }
        self.confirmLatency = classes.map { CoreMetrics.Timer(label: "warren_publish_confirm_seconds", dimensions: [("route", $0)]) }
        self.connectionGauges = Frontend.allCases.map { CoreMetrics.Gauge(label: "warren_connections", dimensions: [("frontend", $0.label)]) }
        self.presenceGauges = classes.map { CoreMetrics.Gauge(label: "warren_presence_users", dimensions: [("route", $0)]) }
        self.presenceCounts = classes.map { _ in ManagedAtomic(0) }
        self.subscriptionGauges = SubscriptionMode.allCases.map {
            CoreMetrics.Gauge(label: "warren_subscriptions", dimensions: [("mode", $0.rawValue)])
        }
        self.amqpUpGauge = CoreMetrics.Gauge(label: "warren_amqp_up")
        self.reconnectCounter = CoreMetrics.Counter(label: "warren_amqp_reconnects_total")
        self.limitHits = Frontend.allCases.flatMap { f in
            LimitReason.allCases.map {
                CoreMetrics.Counter(label: "warren_limit_hits_total", dimensions: [("frontend", f.label), ("reason", $0.label)])
            }
        }
        self.limitHitCounts = (0..<(Frontend.allCases.count * LimitReason.allCases.count)).map { _ in ManagedAtomic(0) }
        self.authFailures = AuthFailureReason.allCases.map {
            CoreMetrics.Counter(label: "warren_auth_failures_total", dimensions: [("reason", $0.label)])
        }
        self.authFailureCounts = AuthFailureReason.allCases.map { _ in ManagedAtomic(0) }
        let cells = classes.count * Frontend.allCases.count * Direction.allCases.count
        self.messageCounts = (0..<cells).map { _ in ManagedAtomic(0) }
        self.byteCounts = (0..<cells).map { _ in ManagedAtomic(0) }
        self.dropCounts = (0..<(classes.count * DropReason.allCases.count)).map { _ in ManagedAtomic(0) }
        self.latencyBuckets = (0..<(classes.count * (Self.buckets.count + 1))).map { _ in ManagedAtomic(0) }
        self.confirmBuckets = (0..<(classes.count * (Self.buckets.count + 1))).map { _ in ManagedAtomic(0) }
        self.connectionCounts = Frontend.allCases.map { _ in ManagedAtomic(0) }
        self.subscriptionCounts = SubscriptionMode.allCases.map { _ in ManagedAtomic(0) }
        // Every series exists from the start (at zero), so dashboards and alerts see it.
        for g in connectionGauges { g.record(0) }
        for g in subscriptionGauges { g.record(0) }
        for g in presenceGauges { g.record(0) }
        amqpUpGauge.record(0)
        reconnectCounter.increment(by: 0)
        for c in authFailures { c.increment(by: 0) }
        for c in messages + bytes + drops + limitHits { c.increment(by: 0) }
    }

    /// A no-op-backed instance for code paths that need one (tests, tools).
    public static let disabled = WarrenMetrics(classifier: RouteClassifier([]), registry: nil)

    // MARK: classes

    /// The route class index of a routing key: its classes matched on its bytes, per message
    /// (a cache by key measured slower: a lock, a hash of the key, and misses on every new key).
    public func classIndex(_ routingKey: String) -> Int {
        classifier.classIndex(routingKey).map { labelOfClass[$0] } ?? classes.count - 1
    }

    // MARK: recording

    /// A routing key's route class, for recording many figures of one message: the lookup
    /// (a locked cache, or classifying the key) is paid once, each record is array indexing.
    public func routeClass(_ routingKey: String) -> RouteClass { RouteClass(index: classIndex(routingKey)) }

    public func message(_ routingKey: String, _ frontend: Frontend, _ direction: Direction, bytes count: Int) {
        message(routeClass(routingKey), frontend, direction, bytes: count)
    }

    public func message(_ route: RouteClass, _ frontend: Frontend, _ direction: Direction, bytes count: Int) {
        let cell = (route.index * Frontend.allCases.count + frontend.rawValue) * Direction.allCases.count + direction.rawValue
        messages[cell].increment(by: 1)
        bytes[cell].increment(by: count)
        messageCounts[cell].wrappingIncrement(ordering: .relaxed)
        byteCounts[cell].wrappingIncrement(by: count, ordering: .relaxed)
    }

    public func dropped(_ routingKey: String?, _ reason: DropReason) {
        let c = routingKey.map(classIndex) ?? classes.count - 1
        let cell = c * DropReason.allCases.count + reason.rawValue
        drops[cell].increment(by: 1)
        dropCounts[cell].wrappingIncrement(ordering: .relaxed)
    }

    /// How many messages were dropped for `reason` so far, over every route class.
    public func droppedCount(_ reason: DropReason) -> Int {
        (0..<classes.count).reduce(0) { $0 + dropCounts[$1 * DropReason.allCases.count + reason.rawValue].load(ordering: .relaxed) }
    }

    /// `count` deliveries of one message to clients of `frontend` (`bytes` in all), accepted at
    /// `ts` (the envelope's, ms). A fan-out is counted once, not once per socket: the counters
    /// move by `count`, `/v1/stats`' latency buckets by `count`, and the Prometheus histogram
    /// `warren_delivery_latency_seconds` takes one observation per message and frontend (every
    /// socket of a fan-out shares its latency up to the write).
    public func delivered(_ route: RouteClass, _ frontend: Frontend, count: Int, bytes: Int, acceptedAtMilliseconds ts: Int64,
                          now: Int64 = WallClock.milliseconds()) {
        let cell = (route.index * Frontend.allCases.count + frontend.rawValue) * Direction.allCases.count + Direction.out.rawValue
        messages[cell].increment(by: Int64(count))
        self.bytes[cell].increment(by: Int64(bytes))
        messageCounts[cell].wrappingIncrement(by: count, ordering: .relaxed)
        byteCounts[cell].wrappingIncrement(by: bytes, ordering: .relaxed)
        // `ts` comes from the message (a header any AMQP publisher may set): a time in the future
        // counts as 0, and one so far back that the difference overflows as the longest bucket.
        let (elapsed, overflow) = now.subtractingReportingOverflow(ts)
        let seconds = overflow ? Self.longestLatency : min(Self.longestLatency, Double(max(0, elapsed)) / 1000)
        let c = route.index
        deliveryLatency[c].recordNanoseconds(Int64(seconds * 1e9))
        latencyBuckets[c * (Self.buckets.count + 1) + Self.bucket(seconds)].wrappingIncrement(by: count, ordering: .relaxed)
    }

    public func confirmed(_ routingKey: String, after duration: Duration) {
        let c = classIndex(routingKey)
        let ns = duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
        confirmLatency[c].recordNanoseconds(ns)
        confirmBuckets[c * (Self.buckets.count + 1) + Self.bucket(Double(ns) / 1e9)].wrappingIncrement(ordering: .relaxed)
    }

    /// A client ran into a configured limit (and was answered with its error or close code).
    public func limitHit(_ frontend: Frontend, _ reason: LimitReason, count: Int = 1) {
        let cell = frontend.rawValue * LimitReason.allCases.count + reason.rawValue
        limitHits[cell].increment(by: Int64(count))
        limitHitCounts[cell].wrappingIncrement(by: count, ordering: .relaxed)
    }

    /// How often `reason` was hit on `frontend` so far.
    public func limitHitCount(_ frontend: Frontend, _ reason: LimitReason) -> Int {
        limitHitCounts[frontend.rawValue * LimitReason.allCases.count + reason.rawValue].load(ordering: .relaxed)
    }

    /// A client's credentials were refused (answered 401 `unauthorized`).
    public func authFailed(_ reason: AuthFailureReason) {
        authFailures[reason.rawValue].increment(by: 1)
        authFailureCounts[reason.rawValue].wrappingIncrement(ordering: .relaxed)
    }

    /// How often credentials were refused for `reason` so far.
    public func authFailureCount(_ reason: AuthFailureReason) -> Int {
        authFailureCounts[reason.rawValue].load(ordering: .relaxed)
    }

    /// Counted here alone; `warren_connections` is set from the count when `/metrics` is
    /// rendered (``prometheusText()``). A poll is counted while it is served, so this runs twice
    /// per poll answer on every event loop, and recording the gauge each time (an atomic
    /// compare-and-swap on a value both loops share, through the metrics handler) cost more
    /// than the count.
    public func connectionOpened(_ frontend: Frontend) {
        connectionCounts[frontend.rawValue].wrappingIncrement(ordering: .relaxed)
    }

    public func connectionClosed(_ frontend: Frontend) {
        connectionCounts[frontend.rawValue].wrappingDecrement(ordering: .relaxed)
    }

    /// Users present (a user counted once per route), from every route present anywhere in the cluster.
    public func presence(_ routes: [String]) {
        var counts = [Int](repeating: 0, count: presenceGauges.count)
        for route in routes { counts[classIndex(route)] += 1 }
        for (i, n) in counts.enumerated() {
            presenceCounts[i].store(n, ordering: .relaxed)
            presenceGauges[i].record(n)
        }
    }

    /// Present users per route class, as last recorded.
    public var presenceByClass: [(route: String, users: Int)] {
        zip(classes, presenceCounts).map { ($0, $1.load(ordering: .relaxed)) }
    }

    public func subscriptionAdded(_ mode: SubscriptionMode, count: Int = 1) {
        let i = mode == .live ? 0 : 1
        subscriptionGauges[i].record(subscriptionCounts[i].wrappingIncrementThenLoad(by: count, ordering: .relaxed))
    }

    public func subscriptionRemoved(_ mode: SubscriptionMode, count: Int = 1) {
        let i = mode == .live ? 0 : 1
        subscriptionGauges[i].record(subscriptionCounts[i].wrappingDecrementThenLoad(by: count, ordering: .relaxed))
    }

    public func amqpUp(_ up: Bool) {
        amqpUpValue.store(up ? 1 : 0, ordering: .relaxed)
        amqpUpGauge.record(up ? 1 : 0)
    }

    public func amqpReconnected() {
        reconnects.wrappingIncrement(ordering: .relaxed)
        reconnectCounter.increment(by: 1)
    }

    static func bucket(_ seconds: Double) -> Int { buckets.firstIndex { seconds <= $0 } ?? buckets.count }

    // MARK: reading

    /// The Prometheus text of everything registered.
    /// The gauges kept as counts (``connectionOpened(_:)``) are set from them first. Two scrapes
    /// at once may each render the other's reading: either is the count of a moment ago.
    public func prometheusText() -> [UInt8] {
        guard let registry else { return [] }
        for (i, gauge) in connectionGauges.enumerated() { gauge.record(connectionCounts[i].load(ordering: .relaxed)) }
        return registry.emitToBuffer()
    }

    /// `/v1/stats`: the same figures per route class as JSON.
    public func statsJSON() -> [UInt8] {
        var w = JSONWriter(capacity: 2048)
        w.raw("{\"version\":")
        w.string(WarrenVersion.string)
        w.raw(",\"routes\":{")
        for (c, name) in classes.enumerated() {
            if c > 0 { w.raw(",") }
            w.string(name)
            w.raw(":{\"messages\":")
            writeCells(&w, messageCounts, c)
            w.raw(",\"bytes\":")
            writeCells(&w, byteCounts, c)
            w.raw(",\"dropped\":{")
            for r in DropReason.allCases {
                if r.rawValue > 0 { w.raw(",") }
                w.string(r.label)
                w.raw(":")
                w.int(Int64(dropCounts[c * DropReason.allCases.count + r.rawValue].load(ordering: .relaxed)))
            }
            w.raw("},\"delivery_latency_ms\":")
            writePercentiles(&w, latencyBuckets, c)
            w.raw(",\"publish_confirm_ms\":")
            writePercentiles(&w, confirmBuckets, c)
            w.raw("}")
        }
        w.raw("},\"connections\":{")
        for f in Frontend.allCases {
            if f.rawValue > 0 { w.raw(",") }
            w.string(f.label)
            w.raw(":")
            w.int(Int64(connectionCounts[f.rawValue].load(ordering: .relaxed)))
        }
        w.raw("},\"subscriptions\":{\"live\":")
        w.int(Int64(subscriptionCounts[0].load(ordering: .relaxed)))
        w.raw(",\"inbox\":")
        w.int(Int64(subscriptionCounts[1].load(ordering: .relaxed)))
        w.raw("},\"presence\":{")
        for (c, name) in classes.enumerated() {
            if c > 0 { w.raw(",") }
            w.string(name)
            w.raw(":")
            w.int(Int64(presenceCounts[c].load(ordering: .relaxed)))
        }
        w.raw("},\"amqp\":{\"up\":")
        w.raw(amqpUpValue.load(ordering: .relaxed) == 1 ? "true" : "false")
        w.raw(",\"reconnects\":")
        w.int(Int64(reconnects.load(ordering: .relaxed)))
        w.raw("},\"limits\":{")
        for f in Frontend.allCases {
            if f.rawValue > 0 { w.raw(",") }
            w.string(f.label)
            w.raw(":{")
            for r in LimitReason.allCases {
                if r.rawValue > 0 { w.raw(",") }
                w.string(r.label)
                w.raw(":")
                w.int(Int64(limitHitCount(f, r)))
            }
            w.raw("}")
        }
        w.raw("},\"auth_failures\":{")
        for r in AuthFailureReason.allCases {
            if r.rawValue > 0 { w.raw(",") }
            w.string(r.label)
            w.raw(":")
            w.int(Int64(authFailureCount(r)))
        }
        w.raw("}}")
        return w.bytes
    }

    /// `{"ws_in": n, "ws_out": n, …}` for one route class.
    private func writeCells(_ w: inout JSONWriter, _ cells: [ManagedAtomic<Int>], _ c: Int) {
        w.raw("{")
        for f in Frontend.allCases {
            for d in Direction.allCases {
                let cell = (c * Frontend.allCases.count + f.rawValue) * Direction.allCases.count + d.rawValue
                if f.rawValue > 0 || d.rawValue > 0 { w.raw(",") }
                w.string("\(f.label)_\(d.label)")
                w.raw(":")
                w.int(Int64(cells[cell].load(ordering: .relaxed)))
            }
        }
        w.raw("}")
    }

    /// p50 / p99 upper bounds (ms) from the bucket counts, plus the count.
    private func writePercentiles(_ w: inout JSONWriter, _ cells: [ManagedAtomic<Int>], _ c: Int) {
        let n = Self.buckets.count + 1
        let counts = (0..<n).map { cells[c * n + $0].load(ordering: .relaxed) }
        let total = counts.reduce(0, +)
        func percentile(_ p: Double) -> Int64? {
            guard total > 0 else { return nil }
            var seen = 0
            for (i, k) in counts.enumerated() {
                seen += k
                if Double(seen) >= p * Double(total) { return i < Self.buckets.count ? Int64(Self.buckets[i] * 1000) : -1 }
            }
            return nil
        }
        w.raw("{\"count\":")
        w.int(Int64(total))
        for (name, p) in [("p50", 0.5), ("p99", 0.99)] {
            w.raw(",")
            w.string(name)
            w.raw(":")
            if let v = percentile(p) { w.int(v) } else { w.raw("null") }
        }
        w.raw("}")
    }
}
