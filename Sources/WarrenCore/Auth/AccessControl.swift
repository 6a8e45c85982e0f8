/// What one principal may publish to and subscribe to (DESIGN §6).
///
/// Patterns carry a `{user}` placeholder, substituted with the principal's
/// name (itself a route word, so the result is still a valid pattern).
public struct AccessPolicy: Sendable, Equatable {
    public var subscribe: [String]
    public var publish: [String]

    public init(subscribe: [String], publish: [String]) {
        self.subscribe = subscribe
        self.publish = publish
    }

    /// The development default: your own conversations and public rooms.
    public static let standard = AccessPolicy(subscribe: ["#.{user}.#", "room.#"], publish: ["#.{user}.#", "room.#"])

    /// Checks the templates parse once `{user}` is replaced (by a sample user name).
    public func validate() throws(RouteError) {
        for template in subscribe + publish {
            _ = try TopicPattern(template.replacingOccurrences(of: "{user}", with: "u"))
        }
    }

    /// The rules for one user.
    public func resolved(for user: String) -> AccessRules {
        func expand(_ list: [String]) -> [TopicPattern] {
            list.compactMap { try? TopicPattern($0.replacingOccurrences(of: "{user}", with: user)) }
        }
        return AccessRules(subscribe: expand(subscribe), publish: expand(publish))
    }
}

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

extension String {
    /// Plain substring replacement without Foundation.
    func replacingOccurrences(of target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = Substring(self)
        while let range = rest.range(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        result += rest
        return result
    }
}

extension Substring {
    func range(of target: String) -> Range<Substring.Index>? {
        guard !target.isEmpty, target.count <= count else { return nil }
        var i = startIndex
        while i < endIndex {
            if self[i...].hasPrefix(target) { return i..<index(i, offsetBy: target.count) }
            i = index(after: i)
        }
        return nil
    }
}
