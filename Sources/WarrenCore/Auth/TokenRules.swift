/// What a token must satisfy besides its signature.
public struct TokenRules: Sendable, Equatable {
    /// Clock skew tolerated on `exp`, `nbf` and `iat`, in seconds.
    public var leeway: Int = 30
    /// When set, the token's `aud` must include it.
    public var audience: String?
    /// When set, the token's `iss` must equal it.
    public var issuer: String?
    /// The claim naming the user (`auth.user_claim`): `sub`, or a string claim of the identity
    /// provider's when its `sub` is no user word (Auth0's `auth0|…`, an e-mail address).
    public var userClaim: String = "sub"

    /// Claims that cannot name the user: they mean something else to Warren or to JWT.
    public static let reservedClaims: Set<String> = ["exp", "nbf", "iat", "aud", "iss", "warren", "jti"]

    public init(leeway: Int = 30, audience: String? = nil, issuer: String? = nil, userClaim: String = "sub") {
        self.leeway = leeway
        self.audience = audience
        self.issuer = issuer
        self.userClaim = userClaim
    }
}
