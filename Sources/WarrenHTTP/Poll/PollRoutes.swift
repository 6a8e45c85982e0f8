import Foundation
import Hummingbird
import NIOConcurrencyHelpers
import NIOCore
import WarrenCore

/// The HTTP polling frontend (docs/protocol.md): sessions, long-polls, acks, and `POST /v1/messages`.
struct PollRoutes: Sendable {
    let configuration: BridgeConfiguration
    let link: BrokerLink
    let authenticator: Authenticator
    let codec: PollSessionCodec
    let support: RouteSupport
    /// One poll service per bridge runtime (the runtime is created when the broker link is up).
    private let cachedService = NIOLockedValueBox<(runtime: ObjectIdentifier, service: PollService)?>(nil)

    init(configuration: BridgeConfiguration, link: BrokerLink, authenticator: Authenticator, codec: PollSessionCodec) {
        self.configuration = configuration
        self.link = link
        self.authenticator = authenticator
        self.codec = codec
        self.support = RouteSupport(authenticator: authenticator, maxBodyBytes: configuration.limits.maxFrameBytes)
        // The service from the start, not from the first poll: it hears of sessions other nodes delete.
        let routes = self
        link.whenReady { _ in _ = try? routes.service() }
    }

    /// The session endpoints the router serves: `POST /v1/poll/<session>/ack` and
    /// `DELETE /v1/poll/<session>` (the poll itself, a new session and a publish are the
    /// connection's, ``HTTPConnection``).
    func register(on router: RouterGroup<IdentifiedRequestContext>) {
        router.post("v1/poll/:session/ack") { request, context in
            await RouteSupport.respond { try await ack(request, context) }
        }
        router.delete("v1/poll/:session") { _, context in
            await RouteSupport.respond {
                try await service().delete(session: context.parameters.get("session") ?? "", user: context.identity.user)
                return Response(status: .noContent)
            }
        }
    }

    // MARK: handlers

    /// `POST /v1/poll`: the new session's JSON (201), for ``HTTPConnection``.
    /// `home`: the event loop of the connection asking, where the session's polls will be
    /// answered (``PollService/create(user:device:policy:subscriptions:home:)``).
    func createSession(query: Query, authorization: String?, body: ByteBuffer, home: (any EventLoop)? = nil)
        async throws(ProtocolError) -> [UInt8]
    {
        let (identity, _) = try await support.authenticate(query: query, authorization: authorization)
        let json = try RouteSupport.parseJSON(body)
        guard case .array(let list) = json["subscriptions"] ?? .null else {
            throw ProtocolError(.badFrame, "subscriptions must be a list", ref: nil)
        }
        var subscriptions: [PollSubscription] = []
        var since: [String: String] = [:]
        for item in list {
            guard let pattern = item["pattern"]?.stringValue else { throw ProtocolError(.badFrame, "each subscription needs a pattern", ref: nil) }
            let id = item["id"]?.stringValue ?? pattern
            var presence: Bool?
            if let p = item["presence"], p != .null {
                guard case .bool(let b) = p else { throw ProtocolError(.badFrame, "presence must be true or false", ref: id) }
                presence = b ? true : nil
            }
            subscriptions.append(PollSubscription(id: id, pattern: pattern, mode: item["mode"]?.stringValue ?? "live", presence: presence))
            if let value = item["since"], value != .null {
                guard let text = value.stringValue, UUIDv7Generator.canonical(text) != nil else {
                    throw ProtocolError(.badFrame, "since must be a message id", ref: id)
                }
                since[id] = text
            }
        }
        var device = identity.device
        if let d = json["device"]?.stringValue {
            guard RouteKey.isValidWord(d) else { throw ProtocolError(.badFrame, "device must be \(RouteKey.wordRule)", ref: nil) }
            device = d
        }
        let polls = try service()
        let (session, expiresIn, starts) = try await polls.create(user: identity.user, device: device, policy: identity.policy,
                                                                      subscriptions: subscriptions, since: since, home: home)
        var w = JSONWriter()
        w.raw("{\"session\":")
        w.string(session)
        w.raw(",\"expires_in\":")
        w.int(Int64(expiresIn))
        w.raw(",\"cursor\":")
        w.string(polls.firstCursor)
        // Where each live subscription starts (`at`: resubscribed `since` it when nothing came),
        // and how each `since` went, as a WebSocket's `subscribed` says them.
        let started = starts.filter { $0.value.at != nil }.sorted { $0.key < $1.key }
        if !started.isEmpty {
            w.raw(",\"at\":{")
            for (n, (id, start)) in started.enumerated() {
                if n > 0 { w.raw(",") }
                w.string(id)
                w.raw(":")
                w.string(start.at ?? "")
            }
            w.raw("}")
        }
        let recovered = starts.compactMap { id, start in start.recovery.map { (id, $0) } }.sorted { $0.0 < $1.0 }
        if !recovered.isEmpty {
            w.raw(",\"recovered\":{")
            for (n, (id, recovery)) in recovered.enumerated() {
                if n > 0 { w.raw(",") }
                w.string(id)
                w.raw(recovery.recovered ? ":{\"recovered\":true}" : ":{\"recovered\":false,\"reason\":")
                if let reason = recovery.failure {
                    w.string(reason.rawValue)
                    w.raw("}")
                }
            }
            w.raw("}")
        }
        w.raw("}")
        return w.bytes
    }

    /// Readies a long-poll for ``PollService/poll(session:user:policy:wait:max:ack:to:last:repeated:now:)``:
    /// verifies the token (then known without suspending) and opens the session on this node
    /// with its inbox consuming. Called by ``HTTPConnection`` for a poll it cannot take at once.
    func preparePoll(query: Query, authorization: String?, session: String, home: (any EventLoop)? = nil) async throws(ProtocolError) {
        let (identity, _) = try await support.authenticate(query: query, authorization: authorization)
        try await service().prepare(session: session, user: identity.user, policy: identity.policy, home: home)
    }

    private func ack(_ request: Request, _ context: IdentifiedRequestContext) async throws -> Response {
        let json = try await support.jsonBody(request)
        guard let cursor = json["cursor"]?.stringValue else { throw ProtocolError(.badFrame, "cursor must be a string", ref: nil) }
        try await service().ack(session: context.parameters.get("session") ?? "", user: context.identity.user, cursor: cursor)
        return Response(status: .noContent)
    }

    /// `POST /v1/messages`: the 202 answer's JSON (``HTTPConnection`` reads the request).
    func publishMessage(query: Query, authorization: String?, body: ByteBuffer) async throws -> [UInt8] {
        let (identity, _) = try await support.authenticate(query: query, authorization: authorization)
        let json = try RouteSupport.parseJSON(body)
        guard case .object = json else { throw ProtocolError(.badFrame, "the body must be a JSON object", ref: nil) }
        let publish = try PublishRequest.parse(json)
        guard let runtime = link.runtime else { throw ProtocolError(.unavailable, "the broker link is not ready", ref: nil) }
        if let refusal = runtime.admitPublish(publish, from: identity.user, rules: identity.rules, via: .poll) { throw refusal }
        let ids: [String]
        do {
            ids = try await runtime.publisher.publish(publish, from: identity.user, via: .poll,
                                                      maxMessageBytes: runtime.limits.maxMessageBytes)
        } catch {
            if error.code == .tooLarge { runtime.metrics.limitHit(.poll, .messageSize) }
            throw error
        }
        var w = JSONWriter()
        if publish.multicast {
            w.raw("{\"ids\":")
            w.value(.array(ids.map { .string($0) }))
            w.raw(",\"routes\":")
            w.value(.array(publish.routes.map { .string($0.value) }))
        } else {
            w.raw("{\"id\":")
            w.string(ids[0])
            w.raw(",\"route\":")
            w.string(publish.routes[0].value)
        }
        w.raw("}")
        return w.bytes
    }

    // MARK: plumbing

    /// The poll service, or why there is none (the link not up, a drain).
    func readyService() -> Result<PollService, ProtocolError> { Result { () throws(ProtocolError) in try service() } }

    /// Answers every long-poll parked on this node (a drain).
    func answerParkedPolls() { cachedService.withLockedValue { $0?.service }?.answerParkedPolls() }

    func service() throws(ProtocolError) -> PollService {
        guard !link.isDraining else { throw ProtocolError(.unavailable, "shutting down", ref: nil) }
        guard let runtime = link.runtime else { throw ProtocolError(.unavailable, "the broker link is not ready", ref: nil) }
        let id = ObjectIdentifier(runtime)
        return cachedService.withLockedValue { cached in
            if let cached, cached.runtime == id { return cached.service }
            let s = PollService(runtime: runtime, settings: configuration.poll, codec: codec, nodeID: link.nodeID,
                                logger: link.logger)
            cached = (id, s)
            return s
        }
    }

    /// `wait` or `max` from the query: a non-negative integer. One too large for an `Int` is still a
    /// number (clamped by the caller to `poll.max_wait` / `poll.max_batch`, as docs/protocol.md says of
    /// any value above them), not a 400.
    static func nonNegative(_ raw: String?, name: String, default value: Int) -> Result<Int, ProtocolError> {
        guard let raw else { return .success(value) }
        guard let n = Query.integer(raw), n >= 0 else {
            return .failure(ProtocolError(.badFrame, "\(name) must be a non-negative integer", ref: nil))
        }
        return .success(n)
    }
}
