import Foundation

/// Who a valid token says the client is, and until when.
public struct VerifiedToken: Sendable {
    public var user: String
    /// When the token stops being accepted (its `exp` plus the leeway): sockets close with 4401 then.
    public var expiresAt: Date?
    /// The token's own access lists, if it carried a `warren` claim.
    public var policy: AccessPolicy?
}
