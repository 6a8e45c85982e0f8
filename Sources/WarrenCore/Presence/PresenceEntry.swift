/// A user present on a route.
public struct PresenceEntry: Hashable, Sendable, Comparable {
    public var route: String
    public var user: String

    public init(route: String, user: String) {
        self.route = route
        self.user = user
    }

    public static func < (a: PresenceEntry, b: PresenceEntry) -> Bool { (a.route, a.user) < (b.route, b.user) }
}
