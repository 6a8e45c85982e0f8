import CoreMetrics
import Prometheus

/// Warren's metrics (docs/operations.md): recorded once, through swift-metrics, into the
/// Prometheus registry `/metrics` renders. `/v1/stats`, the dashboard and the tests read the same
/// figures back from that registry (``snapshot()``); nothing is counted twice.
///
/// Every handle is made once at start for every label combination (route classes are a
/// bounded set from `[[route]]`), so the per-message cost is an array index and the handle's
/// atomic add — no label strings are built per message.
public final class WarrenMetrics: Sendable {
    public let classifier: RouteClassifier
    /// The registry `/metrics` renders and every figure is read from; nil: recorded nowhere.
    public let registry: PrometheusCollectorRegistry?
    let classes: [String]

    private let messages: [CoreMetrics.Counter]          // [class][frontend][direction]
    private let bytes: [CoreMetrics.Counter]
    private let drops: [CoreMetrics.Counter]             // [class][reason]
    private let deliveryLatency: [CoreMetrics.Timer]     // [class]
    private let confirmLatency: [CoreMetrics.Timer]
    private let connections: [CoreMetrics.Meter]         // [frontend]
    private let subscriptions: [CoreMetrics.Meter]       // [mode]
    private let presenceGauges: [CoreMetrics.Gauge]      // [class]
    private let amqpUpGauge: CoreMetrics.Gauge
    private let reconnectCounter: CoreMetrics.Counter
    private let limitHits: [CoreMetrics.Counter]         // [frontend][reason]
    private let authFailures: [CoreMetrics.Counter]      // [reason]
    /// For each of the classifier's classes, the index of its label in `classes`.
    private let labelOfClass: [Int]

    /// Upper bounds of the latency histograms, in seconds.
    public static let buckets: [Double] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
    /// The longest delivery latency recorded (a day); anything longer is recorded as this.
    static let longestLatency: Double = 86_400
    public static let durationBuckets: [Duration] = buckets.map { .nanoseconds(Int64($0 * 1e9)) }

    /// `registry` nil: every figure goes nowhere (``disabled``).
    public init(classifier: RouteClassifier, registry: PrometheusCollectorRegistry? = PrometheusCollectorRegistry()) {
        self.classifier = classifier
        self.registry = registry
        let factory: any MetricsFactory
        if let registry {
            var prometheus = PrometheusMetricsFactory(registry: registry)
            prometheus.defaultDurationHistogramBuckets = Self.durationBuckets
            factory = prometheus
        } else {
            factory = NOOPMetricsHandler.instance
        }
        let classes = classifier.labels
        self.classes = classes
        self.labelOfClass = classifier.classes.map { c in classes.firstIndex(of: c.name) ?? classes.count - 1 }
        var messages: [CoreMetrics.Counter] = [], bytes: [CoreMetrics.Counter] = []
        for c in classes {
            for f in Frontend.allCases {
                for d in Direction.allCases {
                    let dims = [("route", c), ("frontend", f.label), ("direction", d.label)]
                    messages.append(CoreMetrics.Counter(label: "warren_messages_total", dimensions: dims, factory: factory))
                    bytes.append(CoreMetrics.Counter(label: "warren_message_bytes_total", dimensions: dims, factory: factory))
                }
            }
        }
        self.messages = messages
        self.bytes = bytes
        self.drops = classes.flatMap { c in
            DropReason.allCases.map {
                CoreMetrics.Counter(label: "warren_dropped_total", dimensions: [("route", c), ("reason", $0.label)], factory: factory)
            }
        }
        self.deliveryLatency = classes.map {
            CoreMetrics.Timer(label: "warren_delivery_latency_seconds", dimensions: [("route", $0)], factory: factory)
        }
        self.confirmLatency = classes.map {
            CoreMetrics.Timer(label: "warren_publish_confirm_seconds", dimensions: [("route", $0)], factory: factory)
        }
        self.connections = Frontend.allCases.map {
            CoreMetrics.Meter(label: "warren_connections", dimensions: [("frontend", $0.label)], factory: factory)
        }
        self.presenceGauges = classes.map {
            CoreMetrics.Gauge(label: "warren_presence_users", dimensions: [("route", $0)], factory: factory)
        }
        self.subscriptions = SubscriptionMode.allCases.map {
            CoreMetrics.Meter(label: "warren_subscriptions", dimensions: [("mode", $0.rawValue)], factory: factory)
        }
        self.amqpUpGauge = CoreMetrics.Gauge(label: "warren_amqp_up", factory: factory)
        self.reconnectCounter = CoreMetrics.Counter(label: "warren_amqp_reconnects_total", factory: factory)
        self.limitHits = Frontend.allCases.flatMap { f in
            LimitReason.allCases.map {
                CoreMetrics.Counter(label: "warren_limit_hits_total", dimensions: [("frontend", f.label), ("reason", $0.label)],
                                    factory: factory)
            }
        }
        self.authFailures = AuthFailureReason.allCases.map {
            CoreMetrics.Counter(label: "warren_auth_failures_total", dimensions: [("reason", $0.label)], factory: factory)
        }
        // The build, as a series of its own (its version is a label of one value: bounded).
        CoreMetrics.Gauge(label: "warren_build_info", dimensions: [("version", WarrenVersion.string)], factory: factory).record(1)
        // Every series exists from the start (at zero), so dashboards and alerts see it.
        for m in connections + subscriptions { m.set(0) }
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
    }

    public func dropped(_ routingKey: String?, _ reason: DropReason) {
        let c = routingKey.map(classIndex) ?? classes.count - 1
        let cell = c * DropReason.allCases.count + reason.rawValue
        drops[cell].increment(by: 1)
    }

    /// `count` deliveries of one message to clients of `frontend` (`bytes` in all), accepted at
    /// `ts` (the envelope's, ms). A fan-out is counted once, not once per socket: the counters
    /// move by `count`, and the histogram `warren_delivery_latency_seconds` takes one observation
    /// per message and frontend (every socket of a fan-out shares its latency up to the write).
    public func delivered(_ route: RouteClass, _ frontend: Frontend, count: Int, bytes: Int, acceptedAtMilliseconds ts: Int64,
                          now: Int64 = WallClock.milliseconds()) {
        let cell = (route.index * Frontend.allCases.count + frontend.rawValue) * Direction.allCases.count + Direction.out.rawValue
        messages[cell].increment(by: Int64(count))
        self.bytes[cell].increment(by: Int64(bytes))
        // `ts` comes from the message (a header any AMQP publisher may set): a time in the future
        // counts as 0, and one so far back that the difference overflows as the longest bucket.
        let (elapsed, overflow) = now.subtractingReportingOverflow(ts)
        let seconds = overflow ? Self.longestLatency : min(Self.longestLatency, Double(max(0, elapsed)) / 1000)
        let c = route.index
        deliveryLatency[c].recordNanoseconds(Int64(seconds * 1e9))
    }

    public func confirmed(_ routingKey: String, after duration: Duration) {
        let c = classIndex(routingKey)
        let ns = duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000
        confirmLatency[c].recordNanoseconds(ns)
    }

    /// A client ran into a configured limit (and was answered with its error or close code).
    public func limitHit(_ frontend: Frontend, _ reason: LimitReason, count: Int = 1) {
        let cell = frontend.rawValue * LimitReason.allCases.count + reason.rawValue
        limitHits[cell].increment(by: Int64(count))
    }

    /// A client's credentials were refused (answered 401 `unauthorized`).
    public func authFailed(_ reason: AuthFailureReason) {
        authFailures[reason.rawValue].increment(by: 1)
    }

    /// A WebSocket opened, or a long-poll parked (`warren_connections{frontend}`).
    public func connectionOpened(_ frontend: Frontend) {
        connections[frontend.rawValue].increment()
    }

    public func connectionClosed(_ frontend: Frontend) {
        connections[frontend.rawValue].decrement()
    }

    /// Users present (a user counted once per route), from every route present anywhere in the cluster.
    public func presence(_ routes: [String]) {
        var counts = [Int](repeating: 0, count: presenceGauges.count)
        for route in routes { counts[classIndex(route)] += 1 }
        for (i, n) in counts.enumerated() { presenceGauges[i].record(n) }
    }

    public func subscriptionAdded(_ mode: SubscriptionMode, count: Int = 1) {
        subscriptions[mode == .live ? 0 : 1].increment(by: Double(count))
    }

    public func subscriptionRemoved(_ mode: SubscriptionMode, count: Int = 1) {
        subscriptions[mode == .live ? 0 : 1].decrement(by: Double(count))
    }

    public func amqpUp(_ up: Bool) {
        amqpUpGauge.record(up ? 1 : 0)
    }

    public func amqpReconnected() {
        reconnectCounter.increment(by: 1)
    }

    // MARK: reading

    /// The Prometheus text of everything registered.
    public func prometheusText() -> [UInt8] {
        registry?.emitToBuffer() ?? []
    }

    /// Every figure as the registry holds it now.
    public func snapshot() -> MetricsSnapshot {
        MetricsSnapshot(exposition: prometheusText())
    }

    /// How many messages were dropped for `reason` so far, over every route class.
    public func droppedCount(_ reason: DropReason) -> Int {
        snapshot().count("warren_dropped_total", ["reason": reason.label])
    }

    /// How often `reason` was hit on `frontend` so far.
    public func limitHitCount(_ frontend: Frontend, _ reason: LimitReason) -> Int {
        snapshot().count("warren_limit_hits_total", ["frontend": frontend.label, "reason": reason.label])
    }

    /// How often credentials were refused for `reason` so far.
    public func authFailureCount(_ reason: AuthFailureReason) -> Int {
        snapshot().count("warren_auth_failures_total", ["reason": reason.label])
    }

    /// `/v1/stats`: the same figures per route class as JSON (``Stats``).
    public func statsJSON() -> [UInt8] {
        Stats(snapshot(), classes: classes).json()
    }
}
