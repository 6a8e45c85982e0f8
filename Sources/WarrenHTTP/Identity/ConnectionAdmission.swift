import Foundation
import WarrenCore

/// Who may open a long-lived connection (a WebSocket, an event stream), one per server: the
/// identity (docs/protocol.md) and a slot of the user's connections on this node. A refusal is
/// an HTTP answer with the status and JSON error body of docs/protocol.md — 401 a bad or
/// missing token, 400 a bad `user` or `device` word, 429 over the user's connection limit, 503
/// draining or the broker link down — so a client can tell "refresh the token" from "retry later".
final class ConnectionAdmission: Sendable {
    /// An admitted connection: its user's connection slot is taken (``release(_:)`` gives it
    /// back if the connection never opens; its handler does when it closes).
    struct Admitted: Sendable {
        let identity: ClientIdentity
        let expiresAt: Date?
        let runtime: BridgeRuntime
    }

    struct Refusal: Error, Sendable {
        let status: Int
        let code: ErrorCode
        let message: String
    }

    let link: BrokerLink
    let authenticator: Authenticator
    /// The door counted when the user's connection limit refuses.
    let frontend: Frontend

    init(link: BrokerLink, authenticator: Authenticator, frontend: Frontend) {
        self.link = link
        self.authenticator = authenticator
        self.frontend = frontend
    }

    /// Admission without suspending, when the identity is known (none mode, a token verified
    /// before); nil when the token must be verified first (``admit(query:authorization:)``).
    func admitNow(query: Query, authorization: String?) -> Result<Admitted, Refusal>? {
        guard let runtime = accepting() else { return .failure(Self.unavailable) }
        guard let (identity, expiresAt) = authenticator.known(query: query, authorization: authorization) else { return nil }
        return take(identity, expiresAt, runtime)
    }

    func admit(query: Query, authorization: String?) async -> Result<Admitted, Refusal> {
        guard accepting() != nil else { return .failure(Self.unavailable) }
        let identity: ClientIdentity
        let expiresAt: Date?
        do {
            (identity, expiresAt) = try await authenticator.authenticate(query: query, authorization: authorization)
        } catch {
            return .failure(Refusal(status: error.status, code: error.code, message: error.message))
        }
        // Checked again: the link may have gone down while the token was verified.
        guard let runtime = accepting() else { return .failure(Self.unavailable) }
        return take(identity, expiresAt, runtime)
    }

    /// Gives back the connection slot of a connection that never opened, or has closed.
    func release(_ admitted: Admitted) { admitted.runtime.users.closeConnection(admitted.identity.user) }

    private static let unavailable = Refusal(status: 503, code: .unavailable, message: "not accepting connections")

    private func accepting() -> BridgeRuntime? {
        guard !link.isDraining, link.isBrokerUp else { return nil }
        return link.runtime
    }

    private func take(_ identity: ClientIdentity, _ expiresAt: Date?, _ runtime: BridgeRuntime) -> Result<Admitted, Refusal> {
        guard runtime.users.openConnection(identity.user) else {
            runtime.metrics.limitHit(frontend, .connections)
            return .failure(Refusal(status: 429, code: .rateLimited,
                                    message: "at most \(runtime.users.maxConnections) connections (WebSockets, event streams and poll sessions) per user on this node"))
        }
        return .success(Admitted(identity: identity, expiresAt: expiresAt, runtime: runtime))
    }
}
