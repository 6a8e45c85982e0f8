import Foundation
import WarrenCore

/// HS256 tokens for the tests that run Warren in token mode (as `warren token` mints them).
enum TestTokens {
    static func mint(user: String, ttl: TimeInterval, secret: String) async throws -> String {
        try await TokenAuthority.hs256(secret: secret).mint(user: user, ttl: ttl)
    }
}
