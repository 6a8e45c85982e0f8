import Foundation
import NIOConcurrencyHelpers
import WarrenCore

/// Authenticates a request from its query and `Authorization` header (docs/protocol.md).
///
/// A class: it holds the whole configuration, and every door asks it per request (as a
/// struct, each call copied it out and destroyed the copy: ~1 % of a poll answer's samples).
final class Authenticator: Sendable {
    let configuration: BridgeConfiguration
    let tokens: TokenAuthority?
    /// Where refusals are counted (`warren_auth_failures_total`).
    let metrics: WarrenMetrics
    /// Tokens whose signature and claims were verified, until their `exp`: a poller sends the
    /// same token every few seconds, and an event-loop frontend cannot await a verification.
    private let verified = NIOLockedValueBox<[String: VerifiedToken]>([:])
    static let verifiedCacheLimit = 100_000

    init(configuration: BridgeConfiguration, tokens: TokenAuthority?, metrics: WarrenMetrics) {
        self.configuration = configuration
        self.tokens = tokens
        self.metrics = metrics
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
            throw AuthFailure(status: 400, code: .badFrame, message: "device must be \(RouteKey.wordRule)")
        }
        switch configuration.auth.mode {
        case .none:
            guard let user = query.items["user"], !user.isEmpty else {
                metrics.authFailed(.missing)
                throw AuthFailure(status: 401, code: .unauthorized, message: "auth mode none: pass ?user=<name>")
            }
            guard RouteKey.isValidWord(user) else {
                throw AuthFailure(status: 400, code: .badFrame, message: "user must be \(RouteKey.wordRule)")
            }
            return (ClientIdentity(user: user, device: device, policy: configuration.acl), nil)
        case .token:
            guard let token = Self.token(query: query, authorization: authorization), let tokens else {
                metrics.authFailed(.missing)
                throw AuthFailure(status: 401, code: .unauthorized, message: "a bearer token is required")
            }
            let verified: VerifiedToken
            do { verified = try await tokens.verify(token) } catch {
                metrics.authFailed(error.message == TokenAuthority.expired ? .expired : .invalid)
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
