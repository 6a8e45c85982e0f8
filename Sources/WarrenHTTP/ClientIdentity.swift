import Foundation
import NIOConcurrencyHelpers
import WarrenCore

/// Who is connecting: checked before a WebSocket upgrade or a poll request.
struct ClientIdentity: Sendable {
    var user: String
    var device: String
    /// The configured access policy, or the token's own `warren` claim.
    var policy: AccessPolicy

    /// The user's resolved rules: made when needed (a poll of a session already open here
    /// needs none), not on every request.
    var rules: AccessRules { policy.resolved(for: user) }
}

/// Authentication failures, answered with HTTP status before any upgrade.
struct AuthFailure: Error, Sendable {
    var status: Int
    var code: ErrorCode
    var message: String
}

/// Reads the query string of a request target.
struct Query {
    var items = Items()

    /// A query's items, first occurrence of a name winning: a handful per request, looked up
    /// by a linear scan (cheaper than hashing for so few; a poll is read thousands of times a
    /// second).
    struct Items {
        private var pairs: [(name: String, value: String)] = []

        subscript(name: String) -> String? {
            pairs.first { $0.name == name }?.value
        }

        var count: Int { pairs.count }
        var isEmpty: Bool { pairs.isEmpty }

        /// Names kept per query: Warren reads fewer than ten; past this many the rest are
        /// ignored, so a hostile target of thousands of distinct names costs no quadratic scan.
        static let limit = 32

        /// Adds `value` unless `name` is already there (or `limit` names are).
        mutating func add(_ name: String, _ value: String) {
            if pairs.count < Self.limit, self[name] == nil { pairs.append((name, value)) }
        }
    }

    /// Works on the target's contiguous UTF-8 bytes, one pass, no intermediate arrays: a poll's
    /// target carries a session string of a few hundred bytes and is read on every poll (a
    /// profile put a `split`-based version at 9 % of Warren's CPU in the poll benchmark, and
    /// index-by-index work on `String.UTF8View` at ~2 %).
    init(target: String) {
        var target = target
        items = target.withUTF8 { bytes in
            var items = Items()
            guard let q = bytes.firstIndex(of: UInt8(ascii: "?")) else { return items }
            var start = q + 1
            while start < bytes.count {
                let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.count
                if end > start {
                    let pair = UnsafeBufferPointer(rebasing: bytes[start..<end])
                    let eq = pair.firstIndex(of: UInt8(ascii: "="))
                    let name = Self.decode(UnsafeBufferPointer(rebasing: pair[..<(eq ?? pair.count)]))
                    items.add(name, eq.map { Self.decode(UnsafeBufferPointer(rebasing: pair[($0 + 1)...])) } ?? "")
                }
                start = end + 1
            }
            return items
        }
    }

    static func decode(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        let raw = String(decoding: bytes, as: UTF8.self)
        // Most values (session strings, cursors, numbers) need no decoding.
        guard bytes.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) else { return raw }
        let spaced = raw.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}

/// Authenticates a request from its query and `Authorization` header (DESIGN §4).
///
/// A class: it holds the whole configuration, and every door asks it per request (as a
/// struct, each call copied it out and destroyed the copy: ~1 % of a poll answer's samples).
final class Authenticator: Sendable {
    let configuration: BridgeConfiguration
    let tokens: TokenAuthority?
    /// Tokens whose signature and claims were verified, until their `exp`: a poller sends the
    /// same token every few seconds, and an event-loop frontend cannot await a verification.
    private let verified = NIOLockedValueBox<[String: VerifiedToken]>([:])
    static let verifiedCacheLimit = 100_000

    init(configuration: BridgeConfiguration, tokens: TokenAuthority?) {
        self.configuration = configuration
        self.tokens = tokens
    }

    /// The identity, when it is known without suspending: in none mode always, in token mode
    /// for a token verified before and not yet expired. Nil means "ask ``authenticate``",
    /// which also gives the reason for a refusal.
    func knownIdentity(query: Query, authorization: String?) -> ClientIdentity? {
        known(query: query, authorization: authorization)?.identity
    }

    /// ``knownIdentity(query:authorization:)`` with, in token mode, when the token expires.
    func known(query: Query, authorization: String?) -> (identity: ClientIdentity, expiresAt: Date?)? {
        let device = query.items["device"] ?? "default"
        guard RouteKey.isValidWord(device) else { return nil }
        switch configuration.auth.mode {
        case .none:
            guard let user = query.items["user"], RouteKey.isValidWord(user) else { return nil }
            return (ClientIdentity(user: user, device: device, policy: configuration.acl), nil)
        case .token:
            guard let token = Self.token(query: query, authorization: authorization),
                  let known = verified.withLockedValue({ $0[token] }), known.expiresAt.map({ $0 > Date() }) ?? true else { return nil }
            return (ClientIdentity(user: known.user, device: device, policy: known.policy ?? configuration.acl), known.expiresAt)
        }
    }

    static func token(query: Query, authorization: String?) -> String? {
        var token = query.items["token"]
        if let authorization, authorization.lowercased().hasPrefix("bearer ") {
            token = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        }
        return token?.isEmpty == false ? token : nil
    }

    /// The user, their access policy and (token mode) when their token expires.
    func authenticate(query: Query, authorization: String?) async throws(AuthFailure)
        -> (ClientIdentity, expiresAt: Date?)
    {
        let device = query.items["device"] ?? "default"
        guard RouteKey.isValidWord(device) else {
            throw AuthFailure(status: 400, code: .badFrame, message: "device must be a word of [A-Za-z0-9_-]")
        }
        switch configuration.auth.mode {
        case .none:
            guard let user = query.items["user"], !user.isEmpty else {
                throw AuthFailure(status: 401, code: .unauthorized, message: "auth mode none: pass ?user=<name>")
            }
            guard RouteKey.isValidWord(user) else {
                throw AuthFailure(status: 400, code: .badFrame, message: "user must be a word of [A-Za-z0-9_-]")
            }
            return (ClientIdentity(user: user, device: device, policy: configuration.acl), nil)
        case .token:
            guard let token = Self.token(query: query, authorization: authorization), let tokens else {
                throw AuthFailure(status: 401, code: .unauthorized, message: "a bearer token is required")
            }
            let verified: VerifiedToken
            do { verified = try await tokens.verify(token) } catch {
                throw AuthFailure(status: 401, code: .unauthorized, message: error.message)
            }
            self.verified.withLockedValue { cache in
                if cache.count >= Self.verifiedCacheLimit { cache.removeAll(keepingCapacity: true) }
                cache[token] = verified
            }
            return (ClientIdentity(user: verified.user, device: device, policy: verified.policy ?? configuration.acl), verified.expiresAt)
        }
    }
}
