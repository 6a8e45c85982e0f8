/// `[presence]` (docs/protocol.md).
public struct PresenceSettings: Sendable, Equatable {
    /// Off: `"presence":true` is refused (`unavailable`), nothing is announced.
    public var enabled = true
    /// Seconds a node's presence counts without news from it (a node killed with -9 stops
    /// counting after this); each node re-announces its whole state every third of it.
    public var timeoutSeconds = 30

    public init() {}

    /// The fanout exchange the nodes of a deployment tell each other about presence on.
    public static func exchange(for conversations: String) -> String { "\(conversations).presence" }
}
