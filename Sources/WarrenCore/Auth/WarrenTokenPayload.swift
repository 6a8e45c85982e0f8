import JWTKit

/// The claims Warren reads from a token. `exp` is required: a token that never expires
/// would outlive any revocation, and Warren's poll session strings (which carry no `exp`)
/// must never pass for one.
///
/// The user is named by `sub` unless `auth.user_claim` names another claim (an identity
/// provider's `sub` such as Auth0's `auth0|5f7c…` or an e-mail address is no routing-key word),
/// so every other top-level claim with a string value is kept too.
struct WarrenTokenPayload: JWTPayload {
    var sub: SubjectClaim?
    /// Required; nil only in a token refused for it (``problem``).
    var exp: ExpirationClaim?
    var nbf: NotBeforeClaim?
    var iat: IssuedAtClaim?
    var aud: AudienceClaim?
    var iss: IssuerClaim?
    var warren: WarrenClaim?
    /// The other top-level claims whose value is a string.
    var strings: [String: String] = [:]
    /// Why a token whose signature verified is refused all the same: a claim Warren reads that
    /// is not of its kind (a string `exp`, a `warren` claim that is no object of lists) or a
    /// missing `exp`. Decoding never fails on these, so the refusal can say which claim it was
    /// instead of "invalid token" (the signature has verified: the reason tells nobody anything
    /// they could forge with).
    private(set) var problem: String?

    init(sub: SubjectClaim?, exp: ExpirationClaim, nbf: NotBeforeClaim? = nil, iat: IssuedAtClaim? = nil,
         aud: AudienceClaim? = nil, iss: IssuerClaim? = nil, warren: WarrenClaim? = nil, strings: [String: String] = [:]) {
        self.sub = sub
        self.exp = exp
        self.nbf = nbf
        self.iat = iat
        self.aud = aud
        self.iss = iss
        self.warren = warren
        self.strings = strings
    }

    /// A claim's string value: `sub`, or one of the others.
    func string(_ claim: String) -> String? {
        claim == CodingKeys.sub.stringValue ? sub?.value : strings[claim]
    }

    private enum CodingKeys: String, CodingKey {
        case sub, exp, nbf, iat, aud, iss, warren
    }

    private struct OtherKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let known = try decoder.container(keyedBy: CodingKeys.self)
        var problem: String?
        func read<T: Decodable>(_ key: CodingKeys, _ kind: String) -> T? {
            do {
                return try known.decodeIfPresent(T.self, forKey: key)
            } catch {
                if problem == nil { problem = "the token's \(key.stringValue) claim must be \(kind)" }
                return nil
            }
        }
        let date = "a NumericDate (seconds since 1970)"
        sub = read(.sub, "a string")
        exp = read(.exp, date)
        nbf = read(.nbf, date)
        iat = read(.iat, date)
        aud = read(.aud, "a string or a list of strings")
        iss = read(.iss, "a string")
        warren = read(.warren, #"an object of pattern lists, like {"subscribe":["room.#"],"publish":["room.#"]}"#)
        if problem == nil, exp == nil { problem = "the token has no exp claim: Warren accepts only tokens that expire" }
        self.problem = problem
        let others = try decoder.container(keyedBy: OtherKey.self)
        for key in others.allKeys where CodingKeys(stringValue: key.stringValue) == nil {
            if let value = try? others.decode(String.self, forKey: key) { strings[key.stringValue] = value }
        }
    }

    func encode(to encoder: any Encoder) throws {
        var known = encoder.container(keyedBy: CodingKeys.self)
        try known.encodeIfPresent(sub, forKey: .sub)
        try known.encodeIfPresent(exp, forKey: .exp)
        try known.encodeIfPresent(nbf, forKey: .nbf)
        try known.encodeIfPresent(iat, forKey: .iat)
        try known.encodeIfPresent(aud, forKey: .aud)
        try known.encodeIfPresent(iss, forKey: .iss)
        try known.encodeIfPresent(warren, forKey: .warren)
        var others = encoder.container(keyedBy: OtherKey.self)
        for (claim, value) in strings where CodingKeys(stringValue: claim) == nil {
            try others.encode(value, forKey: OtherKey(stringValue: claim))
        }
    }

    /// Time-based and audience checks need the configured leeway and audience, so
    /// `TokenAuthority.verify` does them after the signature check.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
