/// Which bindings the node's live queue needs: one per distinct local pattern, or — past
/// `amqp.live_bind_all_after` distinct patterns — the single binding `#`, every message on the
/// exchange reaching the node and matched here.
///
/// Each binding is a broker-side object RabbitMQ creates one after another (a few hundred
/// microseconds of its scheduler each): with a pattern of its own per user, subscribing was
/// capped near 1,200 sockets a second by the broker, and a node's recovery re-declared one
/// binding per pattern. Past the limit a subscription needs no broker call at all. Below half
/// the limit again, the patterns are bound on their own once more and `#` goes, so a node that
/// shrank stops receiving the whole exchange.
///
/// A pure value: ``LiveHub`` asks it what to do when a pattern gets its first or loses its
/// last local subscriber, performs the steps on the broker in order, and applies each one that
/// succeeded (a step that failed leaves the state as it was for that step).
public struct LiveBindings: Sendable, Equatable {
    /// One change of the queue's bindings.
    public enum Step: Sendable, Equatable {
        /// Bind a pattern on its own.
        case bind(String)
        /// Remove a pattern's own binding.
        case unbind(String)
        /// Bind `#`.
        case bindAll
        /// Remove `#`.
        case unbindAll
    }

    /// What a step asks of the broker: bind or unbind `key`; nil when the binding it needs is
    /// in place already (or must stay: `#` bound as a pattern and as the catch-all is one binding).
    public struct BrokerCall: Sendable, Equatable {
        public let bind: Bool
        public let key: String
    }

    /// 0: every pattern is bound on its own, however many.
    public let bindAllAfter: Int
    /// Patterns bound on their own.
    public private(set) var own: Set<String> = []
    /// `#` is bound as the catch-all.
    public private(set) var all = false

    public init(bindAllAfter: Int) { self.bindAllAfter = max(0, bindAllAfter) }

    /// The routing keys the queue is bound with now, in order (to bind them all again).
    public var brokerKeys: [String] {
        var keys = own
        if all { keys.insert("#") }
        return keys.sorted()
    }

    /// `pattern` got its first local subscriber; `distinct` patterns have one now, it included.
    public func added(_ pattern: String, distinct: Int) -> [Step] {
        if all || own.contains(pattern) { return [] }
        if bindAllAfter > 0, distinct > bindAllAfter { return [.bindAll] }
        return [.bind(pattern)]
    }

    /// `pattern` lost its last local subscriber; `remaining` are the patterns still subscribed.
    public func removed(_ pattern: String, remaining: [String]) -> [Step] {
        var steps: [Step] = own.contains(pattern) ? [.unbind(pattern)] : []
        if all, remaining.count <= bindAllAfter / 2 {
            steps += remaining.filter { !own.contains($0) }.sorted().map(Step.bind)
            steps.append(.unbindAll)
        }
        return steps
    }

    /// The broker call `step` needs in the current state.
    public func brokerCall(_ step: Step) -> BrokerCall? {
        switch step {
        case .bind(let p): own.contains(p) || (p == "#" && all) ? nil : BrokerCall(bind: true, key: p)
        case .unbind(let p): p == "#" && all ? nil : BrokerCall(bind: false, key: p)
        case .bindAll: all || own.contains("#") ? nil : BrokerCall(bind: true, key: "#")
        case .unbindAll: own.contains("#") ? nil : BrokerCall(bind: false, key: "#")
        }
    }

    /// Records that `step` was carried out.
    public mutating func apply(_ step: Step) {
        switch step {
        case .bind(let p): own.insert(p)
        case .unbind(let p): own.remove(p)
        case .bindAll: all = true
        case .unbindAll: all = false
        }
    }
}
