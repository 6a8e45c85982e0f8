/// Why a client's credentials were refused (`warren_auth_failures_total{reason}`): none given
/// (no token in token mode, no `?user=` in none mode), a token that does not verify (signature,
/// algorithm, audience, issuer, user claim), or one that has expired.
public enum AuthFailureReason: Int, CaseIterable, Sendable {
    case missing, invalid, expired
    public var label: String { ["missing", "invalid", "expired"][rawValue] }
}
