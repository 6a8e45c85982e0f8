import Foundation
import JWTKit

/// Turns a session descriptor into the opaque session string and back.
///
/// The string is an HS256-signed JWT, so a node can trust the user, device and
/// subscriptions it names without any shared store. The key is `auth.secret` when set (every node shares it),
/// else a fixed development key — acceptable only because `auth.mode = "none"`
/// trusts `?user=` anyway.
public final class PollSessionCodec: Sendable {
    static let developmentKey = "warren-development-poll-session-key-not-secret"
    let keys: JWTKeyCollection

    /// The longest session string Warren issues (and takes). A poll carries it in its URL, and
    /// a request head — path, query, `Host`, a bearer token — must fit the 16 KB Warren reads
    /// (and the request line a proxy allows: nginx's default is 8 KB, `deploy/docker/nginx.conf`
    /// sets 16 KB). A session whose subscriptions would make a longer one is refused
    /// `too_large` at its creation rather than issued and then never served.
    public static let maxTokenBytes = 12 << 10

    private init(keys: JWTKeyCollection) { self.keys = keys }

    public static func make(secret: String) async -> PollSessionCodec {
        let keys = JWTKeyCollection()
        // A key of its own (the secret plus a suffix), so a user token never passes for a session
        // string and a session string never passes for a user token.
        let key = (secret.utf8.count >= 32 ? secret : developmentKey) + "/warren-poll-session"
        await keys.add(hmac: HMACKey(from: key), digestAlgorithm: .sha256)
        return PollSessionCodec(keys: keys)
    }

    public func encode(_ d: PollSessionDescriptor) async throws -> String {
        try await keys.sign(PollSessionClaims(sub: SubjectClaim(value: d.user), sid: d.id, dev: d.device, subs: d.subscriptions))
    }

    /// The descriptor, or nil for anything that is not a session this deployment issued.
    public func decode(_ token: String) async -> PollSessionDescriptor? {
        guard token.utf8.count <= Self.maxTokenBytes, let c = try? await keys.verify(token, as: PollSessionClaims.self) else { return nil }
        guard RouteKey.isValidWord(c.sid), RouteKey.isValidWord(c.sub.value), RouteKey.isValidWord(c.dev) else { return nil }
        return PollSessionDescriptor(id: c.sid, user: c.sub.value, device: c.dev, subscriptions: c.subs)
    }
}
