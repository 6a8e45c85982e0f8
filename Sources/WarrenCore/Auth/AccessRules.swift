/// A principal's resolved patterns.
public struct AccessRules: Sendable, Equatable {
    public var subscribe: [TopicPattern]
    public var publish: [TopicPattern]

    /// A publish is allowed when its route matches an allowed publish pattern.
    public func canPublish(_ route: RouteKey) -> Bool {
        publish.contains { $0.matches(route) }
    }

    /// A subscription is allowed only when every key its pattern can match is
    /// readable: the pattern is contained in an allowed subscribe pattern.
    public func canSubscribe(_ pattern: TopicPattern) -> Bool {
        subscribe.contains { pattern.isContained(in: $0) }
    }
}
