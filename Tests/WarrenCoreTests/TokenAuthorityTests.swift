import Foundation
import Testing
@testable import WarrenCore

@Suite struct TokenAuthorityTests {
    static let secret = "0123456789abcdef0123456789abcdef-test"

    @Test func mintedTokensVerify() async throws {
        let authority = await TokenAuthority.hs256(secret: Self.secret)
        let token = try await authority.mint(user: "alice", ttl: 3600)
        let verified = try await authority.verify(token)
        #expect(verified.user == "alice")
        #expect(verified.policy == nil)
        #expect(abs((verified.expiresAt ?? .distantPast).timeIntervalSinceNow - 3600) < 5)
    }

    @Test func expiredWrongKeyAndGarbageAreUnauthorized() async throws {
        let authority = await TokenAuthority.hs256(secret: Self.secret)
        let other = await TokenAuthority.hs256(secret: Self.secret + "-other")
        let expired = try await authority.mint(user: "alice", ttl: -10)
        let foreign = try await other.mint(user: "alice", ttl: 3600)
        for token in [expired, foreign, "not.a.token", ""] {
            await #expect(throws: ProtocolError.self) { try await authority.verify(token) }
        }
        let badSub = try await authority.mint(user: "not a word", ttl: 3600)
        await #expect(throws: ProtocolError(.unauthorized, "the token's sub is not a valid user name", ref: nil)) {
            try await authority.verify(badSub)
        }
    }

    @Test func warrenClaimReplacesTheLists() async throws {
        let authority = await TokenAuthority.hs256(secret: Self.secret)
        let token = try await authority.mint(user: "bot", ttl: 60, claim: WarrenClaim(subscribe: ["#"], publish: ["room.#"]))
        let verified = try await authority.verify(token)
        let rules = try #require(verified.policy).resolved(for: verified.user)
        #expect(rules.canSubscribe(try TopicPattern("#")))
        #expect(!rules.canPublish(try RouteKey("alice.bob")))
        #expect(rules.canPublish(try RouteKey("room.x")))
    }
}
