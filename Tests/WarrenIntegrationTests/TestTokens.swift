import Foundation
import JWTKit
import WarrenCore

/// HS256 tokens for the tests that run Warren in token mode (as `warren token` mints them).
enum TestTokens {
    static func mint(user: String, ttl: TimeInterval, secret: String, claim: WarrenClaim? = nil) async throws -> String {
        try await TokenAuthority.hs256(secret: secret).mint(user: user, ttl: ttl, claim: claim)
    }

    /// A token whose `warren` claim lists what it may subscribe to (for files that cannot name
    /// WarrenCore's types beside the client library's).
    static func mint(user: String, ttl: TimeInterval, secret: String, subscribe: [String]) async throws -> String {
        try await mint(user: user, ttl: ttl, secret: secret, claim: WarrenClaim(subscribe: subscribe))
    }

    /// A token as another identity provider issues it: its own `sub` and string claims.
    struct ProviderPayload: JWTPayload {
        var sub: SubjectClaim
        var exp: ExpirationClaim
        var nickname: String
        var email: String

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static func provider(sub: String, nickname: String, email: String, secret: String) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return try await keys.sign(ProviderPayload(sub: SubjectClaim(value: sub), exp: ExpirationClaim(value: Date().addingTimeInterval(3600)),
                                                   nickname: nickname, email: email))
    }
}
