import WarrenCore

/// Who is connecting: checked before a WebSocket upgrade or a poll request.
struct ClientIdentity: Sendable {
    var user: String
    var device: String
    /// The configured access policy, or the token's own `warren` claim.
    var policy: AccessPolicy

    /// The user's resolved rules: made when needed (a poll of a session already open here
    /// needs none), not on every request.
    var rules: AccessRules { policy.resolved(for: user) }
}
