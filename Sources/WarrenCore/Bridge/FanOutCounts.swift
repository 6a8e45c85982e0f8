/// A fan-out's deliveries per frontend, counted into the metrics once.
struct FanOutCounts {
    private var counts = [(deliveries: Int, bytes: Int)](repeating: (0, 0), count: Frontend.allCases.count)

    mutating func add(_ frontend: Frontend, bytes: Int) {
        counts[frontend.rawValue].deliveries += 1
        counts[frontend.rawValue].bytes += bytes
    }

    func record(on metrics: WarrenMetrics, route: RouteClass, acceptedAt: Int64) {
        let now = WallClock.milliseconds()
        for frontend in Frontend.allCases where counts[frontend.rawValue].deliveries > 0 {
            let c = counts[frontend.rawValue]
            metrics.delivered(route, frontend, count: c.deliveries, bytes: c.bytes, acceptedAtMilliseconds: acceptedAt, now: now)
        }
    }
}
