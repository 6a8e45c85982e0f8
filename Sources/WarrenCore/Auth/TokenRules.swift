/// What a token must satisfy besides its signature.
public struct TokenRules: Sendable, Equatable {
    /// Clock skew tolerated on `exp`, `nbf` and `iat`, in seconds.
    public var leeway: Int = 30
    /// When set, the token's `aud` must include it.
    public var audience: String?
    /// When set, the token's `iss` must equal it.
    public var issuer: String?

    public init(leeway: Int = 30, audience: String? = nil, issuer: String? = nil) {
        self.leeway = leeway
        self.audience = audience
        self.issuer = issuer
    }
}
