/// The signature algorithms Warren accepts, one per deployment.
public enum TokenAlgorithm: String, Sendable, CaseIterable {
    /// A shared secret: whoever can verify can also mint.
    case hs256 = "HS256"
    /// An RSA public key (≥ 2048 bits): an identity provider mints, Warren only verifies.
    case rs256 = "RS256"
    /// A P-256 public key: as RS256, with smaller keys and tokens.
    case es256 = "ES256"
}
