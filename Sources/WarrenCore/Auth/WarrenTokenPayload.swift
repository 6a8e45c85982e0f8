import JWTKit

/// The claims Warren reads from a token. `exp` is required: a token that never expires
/// would outlive any revocation, and Warren's poll session strings (which carry no `exp`)
/// must never pass for one.
struct WarrenTokenPayload: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim
    var nbf: NotBeforeClaim?
    var iat: IssuedAtClaim?
    var aud: AudienceClaim?
    var iss: IssuerClaim?
    var warren: WarrenClaim?

    /// Time-based and audience checks need the configured leeway and audience, so
    /// `TokenAuthority.verify` does them after the signature check.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
