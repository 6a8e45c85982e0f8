/// Names the metrics label ("route class") of a routing key: the first `[[route]]`
/// class whose pattern matches, else `other`. Labels never carry raw keys.
public struct RouteClassifier: Sendable {
    public struct RouteClass: Sendable, Equatable {
        public var name: String
        public var pattern: TopicPattern
        public init(name: String, pattern: TopicPattern) {
            self.name = name
            self.pattern = pattern
        }
    }

    public static let other = "other"
    public let classes: [RouteClass]

    public init(_ classes: [RouteClass]) { self.classes = classes }

    /// Every label value this classifier can produce (a bounded set, for metrics).
    public var labels: [String] { classes.map(\.name) + [Self.other] }

    public func classify(_ key: RouteKey) -> String {
        for c in classes where c.pattern.matches(key) { return c.name }
        return Self.other
    }

    /// The index in ``classes`` of the first class matching `routingKey`; nil for "other" (no
    /// class matches, or it is not a valid routing key). Read on the key's bytes, per message:
    /// no allocation, no cache.
    public func classIndex(_ routingKey: String) -> Int? {
        var key = routingKey
        return key.withUTF8 { k -> Int? in
            guard TopicMatcher.isValidKey(k) else { return nil }
            return classes.firstIndex { $0.pattern.matches(validKeyBytes: k) }
        }
    }
}
