import Foundation
import JWTKit
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
        #expect(abs((verified.expiresAt ?? .distantPast).timeIntervalSinceNow - 3630) < 5) // exp + leeway
    }

    @Test func expiredWrongKeyAndGarbageAreUnauthorized() async throws {
        let authority = await TokenAuthority.hs256(secret: Self.secret)
        let other = await TokenAuthority.hs256(secret: Self.secret + "-other")
        let expired = try await authority.mint(user: "alice", ttl: -60) // beyond the 30 s leeway
        let foreign = try await other.mint(user: "alice", ttl: 3600)
        for token in [expired, foreign, "not.a.token", ""] {
            await #expect(throws: ProtocolError.self) { try await authority.verify(token) }
        }
        let badSub = try await authority.mint(user: "not a word", ttl: 3600)
        await #expect(throws: ProtocolError(.unauthorized, "the token's sub is no user name: \(RouteKey.wordRule) (auth.user_claim can name another claim)", ref: nil)) {
            try await authority.verify(badSub)
        }
    }

    /// An identity provider whose `sub` is no user word (Auth0's `auth0|…`, an e-mail address):
    /// `auth.user_claim` names the claim that holds the user instead.
    @Test func anotherClaimCanNameTheUser() async throws {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: Self.secret), digestAlgorithm: .sha256)
        let exp = ExpirationClaim(value: Date().addingTimeInterval(3600))
        let auth0 = try await keys.sign(WarrenTokenPayload(sub: SubjectClaim(value: "auth0|5f7c8ec7c33c6c004bbafe82"), exp: exp,
                                                           strings: ["nickname": "alice", "email": "alice@example.com"]))
        let bySub = await TokenAuthority.hs256(secret: Self.secret)
        await #expect(throws: ProtocolError.self) { try await bySub.verify(auth0) }
        let byNickname = await TokenAuthority.hs256(secret: Self.secret, rules: TokenRules(userClaim: "nickname"))
        #expect(try await byNickname.verify(auth0).user == "alice")
        let byEmail = await TokenAuthority.hs256(secret: Self.secret, rules: TokenRules(userClaim: "email"))
        await #expect(throws: ProtocolError.self) { try await byEmail.verify(auth0) }
        let byMissing = await TokenAuthority.hs256(secret: Self.secret, rules: TokenRules(userClaim: "uid"))
        await #expect(throws: ProtocolError(.unauthorized, "the token has no uid claim to name its user", ref: nil)) {
            try await byMissing.verify(auth0)
        }
        // `warren token` mints for the configured claim too, and its token verifies either way.
        let minted = try await byNickname.mint(user: "bob", ttl: 60)
        #expect(try await byNickname.verify(minted).user == "bob")
        #expect(try await bySub.verify(minted).user == "bob")
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

    // MARK: time claims, audience, issuer

    @Test func leewayAppliesToExpNbfAndIat() async throws {
        let lenient = await TokenAuthority.hs256(secret: Self.secret, rules: TokenRules(leeway: 30))
        let strict = await TokenAuthority.hs256(secret: Self.secret, rules: TokenRules(leeway: 0))
        let now = Date()
        let justExpired = try await lenient.mint(user: "alice", ttl: -10, now: now)
        #expect(try await lenient.verify(justExpired, now: now).user == "alice")
        await #expect(throws: ProtocolError(.unauthorized, "token expired", ref: nil)) { try await strict.verify(justExpired, now: now) }

        let soon = try await lenient.mint(user: "alice", ttl: 600, now: now, notBefore: now.addingTimeInterval(10))
        #expect(try await lenient.verify(soon, now: now).user == "alice")
        await #expect(throws: ProtocolError(.unauthorized, "token not valid yet (nbf)", ref: nil)) { try await strict.verify(soon, now: now) }
        #expect(try await strict.verify(soon, now: now.addingTimeInterval(11)).user == "alice")

        let future = try await lenient.mint(user: "alice", ttl: 600, now: now.addingTimeInterval(120))
        await #expect(throws: ProtocolError(.unauthorized, "token issued in the future (iat)", ref: nil)) {
            try await lenient.verify(future, now: now)
        }
    }

    @Test func audienceAndIssuerAreCheckedWhenConfigured() async throws {
        let plain = await TokenAuthority.hs256(secret: Self.secret)
        let checking = await TokenAuthority.hs256(secret: Self.secret, rules: TokenRules(audience: "chat", issuer: "https://id.example"))
        let other = await TokenAuthority.hs256(secret: Self.secret, rules: TokenRules(audience: "billing", issuer: "https://id.example"))
        let bare = try await plain.mint(user: "alice", ttl: 60)
        let good = try await checking.mint(user: "alice", ttl: 60)
        let wrongAudience = try await other.mint(user: "alice", ttl: 60)
        #expect(try await checking.verify(good).user == "alice")
        #expect(try await plain.verify(good).user == "alice") // unconfigured checks ignore the claims
        await #expect(throws: ProtocolError(.unauthorized, "token not meant for this audience (aud)", ref: nil)) { try await checking.verify(bare) }
        await #expect(throws: ProtocolError(.unauthorized, "token not meant for this audience (aud)", ref: nil)) {
            try await checking.verify(wrongAudience)
        }
        let wrongIssuer = try await TokenAuthority.hs256(secret: Self.secret, rules: TokenRules(audience: "chat", issuer: "evil"))
            .mint(user: "alice", ttl: 60)
        await #expect(throws: ProtocolError(.unauthorized, "token from another issuer (iss)", ref: nil)) { try await checking.verify(wrongIssuer) }
    }

    @Test func tokensWithoutExpAreRefused() async throws {
        struct NoExp: JWTPayload {
            var sub: SubjectClaim
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: Self.secret), digestAlgorithm: .sha256)
        let token = try await keys.sign(NoExp(sub: SubjectClaim(value: "alice")))
        let authority = await TokenAuthority.hs256(secret: Self.secret)
        await #expect(throws: ProtocolError(.unauthorized, "the token has no exp claim: Warren accepts only tokens that expire", ref: nil)) {
            try await authority.verify(token)
        }
    }

    /// A token whose signature verifies but whose claims are not what Warren reads is refused
    /// naming the claim (someone writing their identity provider's rules needs to know which);
    /// a bad signature is told apart from a token that is no JWT at all.
    @Test func refusalsNameTheClaimOrTheSignature() async throws {
        struct Claims<Exp: Codable & Sendable, Extra: Codable & Sendable>: JWTPayload {
            var sub = "alice"
            var exp: Exp
            var warren: Extra
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: Self.secret), digestAlgorithm: .sha256)
        let later = Int(Date().timeIntervalSince1970) + 3600
        let authority = await TokenAuthority.hs256(secret: Self.secret)
        let cases: [(String, String)] = [
            (try await keys.sign(Claims(exp: "tomorrow", warren: ["subscribe": ["room.#"]])), "the token's exp claim must be a NumericDate (seconds since 1970)"),
            (try await keys.sign(Claims(exp: later, warren: "room.#")),
             #"the token's warren claim must be an object of pattern lists, like {"subscribe":["room.#"],"publish":["room.#"]}"#),
            (try await keys.sign(Claims(exp: later, warren: ["subscribe": [5]])),
             #"the token's warren claim must be an object of pattern lists, like {"subscribe":["room.#"],"publish":["room.#"]}"#),
            (try await TokenAuthority.hs256(secret: Self.secret + "-other").mint(user: "alice", ttl: 60),
             "invalid token: its signature does not verify with the configured key"),
            ("not.a.token", "invalid token: malformed, or not signed with the configured algorithm"),
        ]
        for (token, reason) in cases {
            await #expect(throws: ProtocolError(.unauthorized, reason, ref: nil)) { try await authority.verify(token) }
        }
        // The same claims, well formed, verify.
        let fine = try await keys.sign(Claims(exp: later, warren: ["subscribe": ["room.#"]]))
        #expect(try await authority.verify(fine).policy?.subscribe == ["room.#"])
    }

    @Test func pollSessionStringsAreNotTokensAndTokensAreNotSessions() async throws {
        let authority = await TokenAuthority.hs256(secret: Self.secret)
        let codec = await PollSessionCodec.make(secret: Self.secret)
        let session = try await codec.encode(PollSessionDescriptor(id: "abc", user: "alice", device: "default", subscriptions: []))
        await #expect(throws: ProtocolError.self) { try await authority.verify(session) }
        let token = try await authority.mint(user: "alice", ttl: 60)
        #expect(await codec.decode(token) == nil)
        #expect(await codec.decode(session)?.user == "alice")
    }

    // MARK: public keys

    static let rsaPrivate = """
-----BEGIN PRIVATE KEY-----
MIIEvwIBADANBgkqhkiG9w0BAQEFAASCBKkwggSlAgEAAoIBAQDpbtTYqIF1j5I6
rFaS1+VZxcRbf9I/bg+mIBK1o203b0crzBmZv73RcZkPGftZNet4fPqvjDG92/Q/
GxyPhFjZMdipmaYptWEeijYAUSPZ+3BqcFM5nwtqtnznIxagYiuxPFun+nfFxa0Y
kHlZRst50UhQvo9tWBJz/sK0TwFULSuMQTSOw8HGxHCGz6KdThZlEKwT/gsUyb1s
bnydwn7DKsLnW02CWeOXmMkNR5sBuiJDJhHQC4Q6JsU7Ho2UqOzKW9QQf/bGyEQR
VSBtd5ohrM5wOGlg3Q/S99zS2kBPQtf/GLGLFISF9RUy8ZZAeLD6+eVHTDgHsLtG
uO1IjZiPAgMBAAECggEAJBlusx7D/oE4dPhn3weiQVLTPe8zfXmw09kL66kdX8BG
umAy6VL8sOIncG1tMGulQZnaTsGYg6r7R7MSpKMr9lK+FeRcDQEuxsFK/puNts0q
oltCk5uj8VnNURVdD2p/JUaXSg/y69PZI/5btdG779fMnigKGDfRirywMaAyLWkP
LdLGCQmKJNAAFS2ae+OrRiVrDuhTqoL37Nyx1A2iAxFlJ5LnVWg/M+NvpDxL5qe7
Qte8qlF7nKYYQkM5SBJ818gaUDvqE2I4g6HqY6cOimxRw+s8RDyasMkaeMiThlJP
Ya8f6mDVll14RXq5ym6HWHzVkdAhkf03yGB2JQFRSQKBgQD/4lJn7W+gR6IJMbUr
8cYz21CqgzDWsgPs9BopScrlJ4zRfrgvdCLGVkQGAsMB3l7bmF0PPgmruRmUBa2b
Ra4KJ1w15F9H0SyyhM7R8VmTcKYP3ez/Z/MDs2X/EJWL33cQ4/bhOJSm3v9K/x1u
qin1Dg/5Ty2s/yvPts9A2Q8+TQKBgQDpiefU2BnUGBlqAWCxLsXQ3IgT2EzS6ljW
AYvAZxoTsTQASX3JdIzT8z1IarsneUwFj2eMR/GuhTOQH4ESwkSX3P6a58vbGsgN
X0zXgCXAIYiSKP1iW4De5l0ElbXVBf1+tr1x0M0B+DeF4M1tzZ3gTEmGkC+iPkaW
MmxMywu4SwKBgQCFGAsU04NEMv4tGhXKDa+yOVjz19kHUwCHt1AEOcW2+6NbNDZJ
OHb+AtDO75DO4AMm5VFCJFqTX2vWej2ajdvAnEhyH58Pk9VT5ZBN0uNstSMrDZvA
HSlhu2ZKDS472rfrqSc4bl2jjknrkFaWwRuhwva8DlsLqI35NHUInd434QKBgQCB
LPB4wJd4w2O7SMvM9YwhfPofz/Keb1V3+h7s65p27ftPdVcISVlkGxT4q2Cd8u/j
23BxHZJG8BKXU3W3hJEgVvLViAUwSl4BV4dPY+h9n47FGbsd3nMn18/3qz+KdufC
YR3kiJP81OkROkkmxSbgXBIHRlWyrjOo/Hb++wiehQKBgQCwyOGRLHZDAuNV6ray
/cJB3fh10BKQC+BISlzxWBWyuTR8TVh5p4uwOW+dEZw+lB0j3hNdv/6qRT/FAwor
snaDqY+X7SU1maobdr7zYk+g+pdA7UGXLBryMWWNRIGLaE04rUAToddw5eBf/yQV
P6uCSivwqlSKw+qt7uNdwrLl5A==
-----END PRIVATE KEY-----
"""
    static let rsaPublic = """
-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA6W7U2KiBdY+SOqxWktfl
WcXEW3/SP24PpiAStaNtN29HK8wZmb+90XGZDxn7WTXreHz6r4wxvdv0Pxscj4RY
2THYqZmmKbVhHoo2AFEj2ftwanBTOZ8LarZ85yMWoGIrsTxbp/p3xcWtGJB5WUbL
edFIUL6PbVgSc/7CtE8BVC0rjEE0jsPBxsRwhs+inU4WZRCsE/4LFMm9bG58ncJ+
wyrC51tNglnjl5jJDUebAboiQyYR0AuEOibFOx6NlKjsylvUEH/2xshEEVUgbXea
IazOcDhpYN0P0vfc0tpAT0LX/xixixSEhfUVMvGWQHiw+vnlR0w4B7C7RrjtSI2Y
jwIDAQAB
-----END PUBLIC KEY-----
"""

    @Test func rs256VerifiesWithThePublicKeyAndMintsOnlyWithThePrivate() async throws {
        let minter = try await TokenAuthority.publicKey(.rs256, publicPEM: nil, privatePEM: Self.rsaPrivate)
        let verifier = try await TokenAuthority.publicKey(.rs256, publicPEM: Self.rsaPublic, privatePEM: nil)
        #expect(minter.canMint && !verifier.canMint)
        let token = try await minter.mint(user: "alice", ttl: 60)
        #expect(try await verifier.verify(token).user == "alice")
        await #expect(throws: (any Error).self) { try await verifier.mint(user: "mallory", ttl: 60) }
        // Algorithm confusion: an HS256 token keyed with the (public) RSA key's PEM text.
        let confused = try await TokenAuthority.hs256(secret: Self.rsaPublic).mint(user: "mallory", ttl: 60)
        await #expect(throws: ProtocolError.self) { try await verifier.verify(confused) }
        // alg: none, with the payload of a valid token.
        let parts = token.split(separator: ".")
        let none = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + parts[1] + "."
        await #expect(throws: ProtocolError.self) { try await verifier.verify(none) }
        // A token signed by another RSA key.
        let hs = try await TokenAuthority.hs256(secret: Self.secret).mint(user: "alice", ttl: 60)
        await #expect(throws: ProtocolError.self) { try await verifier.verify(hs) }
    }

    @Test func es256RoundTripsAndRejectsOtherKeys() async throws {
        let key = ES256PrivateKey()
        let other = ES256PrivateKey()
        let minter = try await TokenAuthority.publicKey(.es256, publicPEM: nil, privatePEM: key.pemRepresentation)
        let verifier = try await TokenAuthority.publicKey(.es256, publicPEM: key.publicKey.pemRepresentation, privatePEM: nil)
        let stranger = try await TokenAuthority.publicKey(.es256, publicPEM: nil, privatePEM: other.pemRepresentation)
        #expect(try await verifier.verify(try await minter.mint(user: "bob", ttl: 60)).user == "bob")
        await #expect(throws: ProtocolError.self) { try await verifier.verify(try await stranger.mint(user: "bob", ttl: 60)) }
        await #expect(throws: TokenKeyError.self) {
            try await TokenAuthority.publicKey(.es256, publicPEM: Self.rsaPublic, privatePEM: nil)
        }
    }
}
