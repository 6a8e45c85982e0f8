import Foundation
import JWTKit

/// Verifies (and, given a private key or secret, signs) Warren's JWTs through jwt-kit.
///
/// jwt-kit refuses a token whose `alg` header differs from the configured key's, so an
/// HS256 token "signed" with an RSA public key, or `alg: none`, never verifies; HMAC tags
/// are compared in constant time by swift-crypto.
public final class TokenAuthority: Sendable {
    let verifier: JWTKeyCollection
    let signer: JWTKeyCollection?
    public let rules: TokenRules

    private init(verifier: JWTKeyCollection, signer: JWTKeyCollection?, rules: TokenRules) {
        self.verifier = verifier
        self.signer = signer
        self.rules = rules
    }

    /// An HS256 authority. The secret must be at least 32 bytes (config validation enforces it:
    /// jwt-kit traps on shorter HMAC keys).
    public static func hs256(secret: String, rules: TokenRules = TokenRules()) async -> TokenAuthority {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return TokenAuthority(verifier: keys, signer: keys, rules: rules)
    }

    /// An RS256 or ES256 authority from PEM text: a public key (verify only) and optionally the
    /// private key (so `warren token` can mint; a private key alone also serves to verify).
    public static func publicKey(_ algorithm: TokenAlgorithm, publicPEM: String?, privatePEM: String?,
                                 rules: TokenRules = TokenRules()) async throws(TokenKeyError) -> TokenAuthority {
        let verifier = JWTKeyCollection()
        var signer: JWTKeyCollection?
        do {
            switch algorithm {
            case .hs256:
                throw TokenKeyError(description: "HS256 takes a secret, not a key")
            case .rs256:
                if let publicPEM { await verifier.add(rsa: try Insecure.RSA.PublicKey(pem: publicPEM), digestAlgorithm: .sha256) }
                if let privatePEM {
                    let keys = JWTKeyCollection()
                    let key = try Insecure.RSA.PrivateKey(pem: privatePEM)
                    await keys.add(rsa: key, digestAlgorithm: .sha256)
                    if publicPEM == nil { await verifier.add(rsa: key.publicKey, digestAlgorithm: .sha256) }
                    signer = keys
                }
            case .es256:
                if let publicPEM { await verifier.add(ecdsa: try ES256PublicKey(pem: publicPEM)) }
                if let privatePEM {
                    let keys = JWTKeyCollection()
                    let key = try ES256PrivateKey(pem: privatePEM)
                    await keys.add(ecdsa: key)
                    if publicPEM == nil { await verifier.add(ecdsa: key.publicKey) }
                    signer = keys
                }
            }
        } catch let error as TokenKeyError {
            throw error
        } catch {
            throw TokenKeyError(description: "not a valid \(algorithm.rawValue) key in PEM form (\(error))")
        }
        guard publicPEM != nil || privatePEM != nil else { throw TokenKeyError(description: "no key given") }
        return TokenAuthority(verifier: verifier, signer: signer, rules: rules)
    }

    /// Whether `pem` is a key `algorithm` can use (an RSA key for RS256, a P-256 EC key for
    /// ES256), public or private; checked when the configuration is read, so that `warren check`
    /// refuses what `warren serve` would, and names the file's key.
    public static func checkKey(_ pem: String, _ algorithm: TokenAlgorithm, isPrivate: Bool) throws(TokenKeyError) {
        do {
            switch (algorithm, isPrivate) {
            case (.hs256, _): return
            case (.rs256, false): _ = try Insecure.RSA.PublicKey(pem: pem)
            case (.rs256, true): _ = try Insecure.RSA.PrivateKey(pem: pem)
            case (.es256, false): _ = try ES256PublicKey(pem: pem)
            case (.es256, true): _ = try ES256PrivateKey(pem: pem)
            }
        } catch {
            throw TokenKeyError(description: "not an \(algorithm.rawValue) \(isPrivate ? "private" : "public") key in PEM form "
                                + "(RS256 takes an RSA key, ES256 a P-256 EC key)")
        }
    }

    /// Verifies signature, `exp` / `nbf` / `iat` (within the leeway), `aud` and `iss` when
    /// configured; the user's claim (`sub` unless `auth.user_claim` says) must be a user word. The error message names the reason
    /// but never echoes the token.
    public func verify(_ token: String, now: Date = Date()) async throws(ProtocolError) -> VerifiedToken {
        let payload: WarrenTokenPayload
        do {
            payload = try await verifier.verify(token, as: WarrenTokenPayload.self)
        } catch let error as JWTError where error.errorType == .signatureVerificationFailed {
            throw ProtocolError(.unauthorized, "invalid token: its signature does not verify with the configured key", ref: nil)
        } catch {
            throw ProtocolError(.unauthorized, "invalid token: malformed, or not signed with the configured algorithm", ref: nil)
        }
        if let problem = payload.problem { throw ProtocolError(.unauthorized, problem, ref: nil) }
        guard let exp = payload.exp else { throw ProtocolError(.unauthorized, "the token has no exp claim", ref: nil) }
        let leeway = TimeInterval(rules.leeway)
        guard exp.value.addingTimeInterval(leeway) > now else {
            throw ProtocolError(.unauthorized, Self.expired, ref: nil)
        }
        if let nbf = payload.nbf, nbf.value.addingTimeInterval(-leeway) > now {
            throw ProtocolError(.unauthorized, "token not valid yet (nbf)", ref: nil)
        }
        if let iat = payload.iat, iat.value.addingTimeInterval(-leeway) > now {
            throw ProtocolError(.unauthorized, "token issued in the future (iat)", ref: nil)
        }
        if let audience = rules.audience, !(payload.aud?.value.contains(audience) ?? false) {
            throw ProtocolError(.unauthorized, "token not meant for this audience (aud)", ref: nil)
        }
        if let issuer = rules.issuer, payload.iss?.value != issuer {
            throw ProtocolError(.unauthorized, "token from another issuer (iss)", ref: nil)
        }
        guard let user = payload.string(rules.userClaim) else {
            throw ProtocolError(.unauthorized, "the token has no \(rules.userClaim) claim to name its user", ref: nil)
        }
        guard RouteKey.isValidWord(user) else {
            throw ProtocolError(.unauthorized, "the token's \(rules.userClaim) is no user name: \(RouteKey.wordRule)"
                                + (rules.userClaim == "sub" ? " (auth.user_claim can name another claim)" : ""), ref: nil)
        }
        var policy: AccessPolicy?
        if let claim = payload.warren {
            let p = AccessPolicy(subscribe: claim.subscribe ?? [], publish: claim.publish ?? [])
            do { try p.validate() } catch { throw ProtocolError(.unauthorized, "the token's warren claim is invalid: \(error)", ref: nil) }
            policy = p
        }
        return VerifiedToken(user: user, expiresAt: exp.value.addingTimeInterval(leeway), policy: policy)
    }

    /// The message of the refusal of a token past its `exp` (and the leeway).
    public static let expired = "token expired"

    /// Whether this authority holds a key it can sign with.
    public var canMint: Bool { signer != nil }

    /// Mints a token for `user` valid for `ttl` seconds, carrying the configured `aud` and `iss`.
    public func mint(user: String, ttl: TimeInterval, claim: WarrenClaim? = nil, now: Date = Date(),
                     notBefore: Date? = nil) async throws -> String {
        guard let signer else { throw TokenKeyError(description: "no private key or secret to sign with") }
        // The user in `sub`, and in the claim that names it when that is another.
        let payload = WarrenTokenPayload(
            sub: SubjectClaim(value: user), exp: ExpirationClaim(value: now.addingTimeInterval(ttl)),
            nbf: notBefore.map { NotBeforeClaim(value: $0) }, iat: IssuedAtClaim(value: now),
            aud: rules.audience.map { AudienceClaim(value: [$0]) }, iss: rules.issuer.map { IssuerClaim(value: $0) },
            warren: claim, strings: rules.userClaim == "sub" ? [:] : [rules.userClaim: user])
        return try await signer.sign(payload)
    }
}
