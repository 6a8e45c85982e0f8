import Foundation
import JWTKit

/// The optional `warren` claim: per-token subscribe / publish lists that replace the configured ones.
public struct WarrenClaim: Codable, Sendable, Equatable {
    public var subscribe: [String]?
    public var publish: [String]?
}

/// The claims Warren reads from a token.
struct WarrenTokenPayload: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim?
    var iat: IssuedAtClaim?
    var warren: WarrenClaim?

    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp?.verifyNotExpired()
    }
}

/// Who a valid token says the client is, and until when.
public struct VerifiedToken: Sendable {
    public var user: String
    public var expiresAt: Date?
    /// The token's own access lists, if it carried a `warren` claim.
    public var policy: AccessPolicy?
}

/// Signs and verifies Warren's JWTs (HS256 via jwt-kit).
public final class TokenAuthority: Sendable {
    let keys: JWTKeyCollection

    private init(keys: JWTKeyCollection) { self.keys = keys }

    /// An HS256 authority. The secret must be at least 32 bytes (config validation enforces it:
    /// jwt-kit traps on shorter HMAC keys).
    public static func hs256(secret: String) async -> TokenAuthority {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return TokenAuthority(keys: keys)
    }

    /// Verifies signature and expiry; the `sub` must be a valid user word.
    public func verify(_ token: String) async throws(ProtocolError) -> VerifiedToken {
        let payload: WarrenTokenPayload
        do {
            payload = try await keys.verify(token, as: WarrenTokenPayload.self)
        } catch {
            throw ProtocolError(.unauthorized, "invalid or expired token", ref: nil)
        }
        guard RouteKey.isValidWord(payload.sub.value) else {
            throw ProtocolError(.unauthorized, "the token's sub is not a valid user name", ref: nil)
        }
        var policy: AccessPolicy?
        if let claim = payload.warren {
            let p = AccessPolicy(subscribe: claim.subscribe ?? [], publish: claim.publish ?? [])
            do { try p.validate() } catch { throw ProtocolError(.unauthorized, "the token's warren claim is invalid: \(error)", ref: nil) }
            policy = p
        }
        return VerifiedToken(user: payload.sub.value, expiresAt: payload.exp?.value, policy: policy)
    }

    /// Mints a token for `user` valid for `ttl` seconds.
    public func mint(user: String, ttl: TimeInterval, claim: WarrenClaim? = nil) async throws -> String {
        let now = Date()
        let payload = WarrenTokenPayload(sub: SubjectClaim(value: user), exp: ExpirationClaim(value: now.addingTimeInterval(ttl)),
                                         iat: IssuedAtClaim(value: now), warren: claim)
        return try await keys.sign(payload)
    }
}
