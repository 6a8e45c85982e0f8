import Foundation

/// `/v1/stats`, for people and the dashboard: the figures of `/metrics` per route class, read
/// from the registry (``MetricsSnapshot``) and encoded with Foundation's encoder (a cold path).
/// Latencies are given as bucket upper bounds in milliseconds (-1: above the top bucket).
public struct Stats: Encodable, Sendable {
    public struct Latency: Encodable, Sendable {
        public var count: Int
        public var p50: Int?
        public var p99: Int?
    }

    public struct Route: Encodable, Sendable {
        /// `<frontend>_<direction>`: `ws_in`, `poll_out`, `amqp_in`, …
        public var messages: [String: Int]
        public var bytes: [String: Int]
        public var dropped: [String: Int]
        public var deliveryLatency: Latency
        public var publishConfirm: Latency

        enum CodingKeys: String, CodingKey {
            case messages, bytes, dropped
            case deliveryLatency = "delivery_latency_ms"
            case publishConfirm = "publish_confirm_ms"
        }
    }

    public struct AMQP: Encodable, Sendable {
        public var up: Bool
        public var reconnects: Int
    }

    public var version: String
    public var routes: [String: Route]
    public var connections: [String: Int]
    public var subscriptions: [String: Int]
    public var presence: [String: Int]
    public var amqp: AMQP
    /// `frontend` → `reason` → hits.
    public var limits: [String: [String: Int]]
    public var authFailures: [String: Int]

    enum CodingKeys: String, CodingKey {
        case version, routes, connections, subscriptions, presence, amqp, limits
        case authFailures = "auth_failures"
    }

    /// The figures of `snapshot` for the route classes `classes`.
    public init(_ snapshot: MetricsSnapshot, classes: [String]) {
        version = WarrenVersion.string
        func cells(_ name: String, _ route: String) -> [String: Int] {
            var out: [String: Int] = [:]
            for f in Frontend.allCases {
                for d in Direction.allCases {
                    out["\(f.label)_\(d.label)"] = snapshot.count(name, ["route": route, "frontend": f.label, "direction": d.label])
                }
            }
            return out
        }
        func latency(_ name: String, _ route: String) -> Latency {
            let h = snapshot.histogram(name, ["route": route])
            func ms(_ seconds: Double?) -> Int? { seconds.map { $0.isInfinite ? -1 : Int(($0 * 1000).rounded()) } }
            return Latency(count: h.count, p50: ms(h.p50), p99: ms(h.p99))
        }
        routes = Dictionary(uniqueKeysWithValues: classes.map { route in
            (route, Route(messages: cells("warren_messages_total", route), bytes: cells("warren_message_bytes_total", route),
                          dropped: Dictionary(uniqueKeysWithValues: DropReason.allCases.map {
                              ($0.label, snapshot.count("warren_dropped_total", ["route": route, "reason": $0.label]))
                          }),
                          deliveryLatency: latency("warren_delivery_latency_seconds", route),
                          publishConfirm: latency("warren_publish_confirm_seconds", route)))
        })
        connections = Dictionary(uniqueKeysWithValues: Frontend.allCases.map {
            ($0.label, snapshot.count("warren_connections", ["frontend": $0.label]))
        })
        subscriptions = Dictionary(uniqueKeysWithValues: SubscriptionMode.allCases.map {
            ($0.rawValue, snapshot.count("warren_subscriptions", ["mode": $0.rawValue]))
        })
        presence = Dictionary(uniqueKeysWithValues: classes.map { ($0, snapshot.count("warren_presence_users", ["route": $0])) })
        amqp = AMQP(up: snapshot.sum("warren_amqp_up") == 1, reconnects: snapshot.count("warren_amqp_reconnects_total"))
        limits = Dictionary(uniqueKeysWithValues: Frontend.allCases.map { f in
            (f.label, Dictionary(uniqueKeysWithValues: LimitReason.allCases.map {
                ($0.label, snapshot.count("warren_limit_hits_total", ["frontend": f.label, "reason": $0.label]))
            }))
        })
        authFailures = Dictionary(uniqueKeysWithValues: AuthFailureReason.allCases.map {
            ($0.label, snapshot.count("warren_auth_failures_total", ["reason": $0.label]))
        })
    }

    public func json() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return (try? Array(encoder.encode(self))) ?? Array("{}".utf8)
    }
}
