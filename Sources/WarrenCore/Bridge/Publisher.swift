import AMQPClient
import Atomics
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Publishes client messages to the exchange with publisher confirms.
///
/// One confirm-mode channel carries every publish; confirms are pipelined, so
/// many sends are in flight at once. A send is answered only after the broker
/// confirmed every route of it; the `(from, cid)` cache makes a retried send
/// return the first ids instead of publishing twice (also one first confirmed on
/// another node, told here through ``rememberElsewhere(from:cid:ids:nowMilliseconds:)``; one
/// another node wrote but did not confirm, through
/// ``rememberAttemptElsewhere(from:cid:routes:ids:nowMilliseconds:)``, is published again
/// with its ids). When the broker closes the
/// channel with a channel error, the sends on it are answered `unavailable` and a
/// new channel takes its place (``ReplaceableChannel``); a nack moves publishing to a fresh
/// channel too (``nacked()``).
public final class Publisher: Sendable {
    let link: ReplaceableChannel
    let exchange: String
    let confirmTimeout: Duration
    let ids = UUIDv7Generator()
    /// The `(from, cid)` cache, and who hears of each send with a cid (the other nodes: ``Presence``),
    /// read under the same lock (``onSends(attempting:confirmed:)``).
    private let dedup: NIOLockedValueBox<(cache: DedupCache, listeners: SendListeners?)>
    /// Who hears of each send with a cid: `attempting` gives the announcement written just before
    /// the send on the same channel, `confirmed` hears its confirm.
    ///
    /// A struct, not two closures in the box's tuple: a closure kept straight in a generic box
    /// comes out of each `withLockedValue` through a conversion wrapper and goes back in wrapped
    /// once more, so every send with a cid added a layer that every later call went through
    /// (5–8 ms of CPU per publish after 20,000 of them: `HandlerIndirectionTests`).
    private struct SendListeners {
        let attempting: AttemptAnnouncer
        let confirmed: @Sendable (String, String, [String]) -> Void
    }
    /// Given a send with a cid about to be written (from, cid, routes, ids), the announcement to
    /// write before it and the queues it goes to (through the default exchange, which is always
    /// there: a publish to an exchange that is not would close the channel), or nil for none.
    public typealias AttemptAnnouncer = @Sendable (String, String, [String], [String]) -> (body: ByteBuffer, queues: [String])?
    /// Sends with a cid whose confirms are still pending: a retry waits for the first.
    private let inFlight = NIOLockedValueBox<[String: [CheckedContinuation<[String]?, Never>]]>([:])

    let metrics: WarrenMetrics

    /// Tells whether the broker has blocked publishing (a resource alarm).
    let blockedReason: @Sendable () -> String?
    let logger: Logger
    /// Whether a channel the broker closed is replaced.
    let canReopen: Bool
    let closedByBroker: @Sendable (AMQPError?) -> Void
    /// When the publishing channel was last rotated after a nack (uptime nanoseconds).
    private let lastRotation = ManagedAtomic<UInt64>(0)
    private let rotationReported = OnceFlag()

    /// `reopen` opens a replacement confirm-mode channel when the broker closed the current one
    /// (nil: never replaced); `closedByBroker` hears why (a 404: the exchange is gone, ``ExchangeWatch``).
    public init(channel: any BrokerChannel, reopen: (@Sendable () async throws -> any BrokerChannel)? = nil, exchange: String,
                confirmTimeout: Duration = .seconds(10), metrics: WarrenMetrics, logger: Logger,
                blockedReason: @escaping @Sendable () -> String? = { nil },
                closedByBroker: @escaping @Sendable (AMQPError?) -> Void = { _ in }) {
        let link = ReplaceableChannel(channel, open: reopen)
        self.link = link
        self.blockedReason = blockedReason
        self.exchange = exchange
        self.confirmTimeout = confirmTimeout
        self.metrics = metrics
        self.dedup = NIOLockedValueBox((DedupCache(), nil))
        self.logger = logger
        self.canReopen = reopen != nil
        self.closedByBroker = closedByBroker
        watch(channel)
    }

    /// Counts what the broker returns on `channel` (publishes are mandatory: a message no queue
    /// was bound for comes back) until it closes; closed by the broker while current, it is
    /// replaced and the new one watched.
    private func watch(_ channel: any BrokerChannel) {
        Task {
            for await returned in channel.returns() {
                metrics.dropped(returned.routingKey, .unroutable)
            }
            guard canReopen, ReplaceableChannel.closedByBroker(channel), link.channel === channel else { return }
            closedByBroker(channel.closeReason)
            logger.warning("the broker closed the publishing channel; opening another",
                           metadata: ["reason": "\(channel.closeReason.map { "\($0)" } ?? "")"])
            let link = link
            guard let fresh = await BrokerRetry.untilDone("opening a publishing channel", logger: logger, {
                try await link.replace(channel)
            }), fresh !== channel else { return }
            logger.info("publishing channel replaced")
            watch(fresh)
        }
    }

    /// A publish the broker nacked: the next ones go on a fresh channel (at most one a second),
    /// and the old one is closed once its confirms are answered. RabbitMQ 3.10 (Debian's) gives
    /// a channel's first publish to a quorum queue the leader its queue record names; when that
    /// was during an election (the leader's node had just died, and the node had just failed
    /// over), the channel kept sending to the dead leader and every publish routed to that queue
    /// was nacked until the dead node came back — with the store's queue a quorum queue, every
    /// publish of the node. A fresh channel asks again. A nack for another reason (an inbox
    /// full under `overflow = "reject-publish"`) costs a channel open at most once a second.
    func nacked() {
        let now = NIODeadline.now().uptimeNanoseconds
        let last = lastRotation.load(ordering: .relaxed)
        guard now &- last >= 1_000_000_000,
              lastRotation.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged else { return }
        let stale = link.channel
        Task {
            guard let fresh = try? await link.rotate(stale) else { return }
            // Once: a full inbox under reject-publish makes one a second for as long as it is full.
            if rotationReported.first() {
                logger.info("the broker nacked a publish: publishing on a fresh channel (said once; it happens at most once a second)")
            }
            watch(fresh)
            try? await Task.sleep(for: confirmTimeout + .seconds(1))
            try? await stale.close()
        }
    }

    /// Publishes one envelope per route, stamped with `from` and `via`; returns the ids once
    /// the broker confirmed all of them.
    public func publish(_ request: PublishRequest, from: String, via: Via, maxMessageBytes: Int,
                        nowMilliseconds: Int64 = WallClock.milliseconds()) async throws(ProtocolError) -> [String] {
        try await submit(request, from: from, via: via, maxMessageBytes: maxMessageBytes, nowMilliseconds: nowMilliseconds).wait()
    }

    /// Writes the publishes now (so one client's sends reach the broker in the order it made
    /// them) and returns a handle to await their confirms.
    public func submit(_ request: PublishRequest, from: String, via: Via, maxMessageBytes: Int,
                       nowMilliseconds: Int64 = WallClock.milliseconds()) throws(ProtocolError) -> PendingPublish {
        var dedupKey: String?
        // Ids an earlier unconfirmed try of this (from, cid) gave its routes: given again.
        var earlierIDs: [String: String] = [:]
        var attempting: AttemptAnnouncer?
        if let cid = request.cid {
            let earlier = dedup.withLockedValue { d in
                attempting = d.listeners?.attempting
                return d.cache.earlier(from: from, cid: cid, nowMilliseconds: nowMilliseconds)
            }
            switch earlier {
            case .confirmed(let ids)?:
                return PendingPublish(publisher: self, state: .done(ids), sent: [], via: via, started: ContinuousClock.now)
            case .attempted(let ids)?:
                earlierIDs = ids
            case nil:
                break
            }
            let key = DedupCache.key(from: from, cid: cid)
            let joining: Bool = inFlight.withLockedValue { s in
                if s[key] != nil { return true }
                s[key] = []
                return false
            }
            if joining {
                return PendingPublish(publisher: self, state: .joining(key, request, from, via, maxMessageBytes), sent: [], via: via,
                                      started: ContinuousClock.now)
            }
            dedupKey = key
        }
        var envelopes: [(Envelope, [UInt8])] = []
        for route in request.routes {
            let envelope = Envelope(id: earlierIDs[route.value] ?? ids.next(nowMilliseconds: UInt64(nowMilliseconds)), route: route.value,
                                    type: request.type,
                                    from: from, via: via, ts: nowMilliseconds, body: request.body, cid: request.cid,
                                    transient: request.transient, headers: request.headers)
            let bytes = envelope.encoded()
            guard bytes.count <= maxMessageBytes else {
                if let key = dedupKey { finishInFlight(key, with: nil) }
                throw ProtocolError(.tooLarge, "envelope of \(bytes.count) bytes exceeds \(maxMessageBytes)", ref: request.cid)
            }
            envelopes.append((envelope, bytes))
        }
        // While the broker blocks publishing it reads nothing from the connection: a publish
        // written now would hang until the confirm timeout, so it is refused at once.
        if let reason = blockedReason() {
            if let key = dedupKey { finishInFlight(key, with: nil) }
            throw ProtocolError(.unavailable, "the broker is refusing publishes for now (\(reason)); retry later", ref: request.cid)
        }
        var confirms: [EventLoopFuture<Void>] = []
        let channel = link.channel
        do {
            // Told to the other nodes first, on this channel: once any of the send is routed, so
            // is this, even if this node dies before its confirm (a retry elsewhere keeps the ids).
            if let attempting, let cid = request.cid,
               let told = attempting(from, cid, envelopes.map(\.0.route), envelopes.map(\.0.id)) {
                for queue in told.queues {
                    _ = try channel.startPublish(told.body, exchange: "", routingKey: queue, mandatory: false,
                                                 properties: BasicProperties(contentType: "application/json", deliveryMode: 1), timeout: nil)
                }
            }
            for (envelope, bytes) in envelopes {
                confirms.append(try channel.startPublish(ByteBuffer(bytes: bytes), exchange: exchange, routingKey: envelope.route,
                                                         mandatory: true, properties: EnvelopeAMQPMapping.properties(for: envelope),
                                                         timeout: .nanoseconds(Int64(confirmTimeout.components.seconds) * 1_000_000_000))
                    .futureResult)
            }
        } catch {
            if let key = dedupKey { finishInFlight(key, with: nil) }
            throw ProtocolError(.unavailable, "the broker link is not available: \(error)", ref: request.cid)
        }
        return PendingPublish(publisher: self, state: .confirming(envelopes.map(\.0.id), confirms, dedupKey, request.cid, from,
                                                                  nowMilliseconds),
                              sent: envelopes.map { ($0.0.route, $0.1.count) }, via: via, started: ContinuousClock.now)
    }

    /// Publishes a recovery's fence (``StoreFence``) to the store's queue `queue`, through the
    /// default exchange, and waits for the broker's confirm: the fence is then queued behind
    /// everything routed to that queue before.
    public func publishFence(_ id: String, queue: String) async throws {
        let properties = BasicProperties(deliveryMode: 1, messageID: id, type: StoreFence.messageType)
        try await link.channel.startPublish(ByteBuffer(), exchange: "", routingKey: queue, mandatory: false, properties: properties,
                                            timeout: .nanoseconds(Int64(confirmTimeout.components.seconds) * 1_000_000_000))
            .futureResult.get()
    }

    func finishInFlight(_ key: String, with ids: [String]?) {
        let waiters = inFlight.withLockedValue { $0.removeValue(forKey: key) } ?? []
        waiters.forEach { $0.resume(returning: ids) }
    }

    func join(_ key: String) async -> [String]? {
        await withCheckedContinuation { c in
            let stillRunning = inFlight.withLockedValue { s -> Bool in
                guard s[key] != nil else { return false }
                s[key]!.append(c)
                return true
            }
            if !stillRunning { c.resume(returning: nil) }
        }
    }

    func remember(from: String, cid: String, ids: [String], now: Int64) {
        let tell = dedup.withLockedValue { d in
            d.cache.remember(from: from, cid: cid, ids: ids, nowMilliseconds: now)
            return d.listeners?.confirmed
        }
        tell?(from, cid, ids)
    }

    func rememberAttempt(from: String, cid: String, routes: [String], ids: [String], now: Int64) {
        dedup.withLockedValue { $0.cache.rememberAttempt(from: from, cid: cid, routes: routes, ids: ids, nowMilliseconds: now) }
    }

    /// Tells the other nodes of every send with a cid (the wiring: ``Presence``): `attempting`
    /// gives what to write just before the send, on the same channel (a retry reaching another
    /// node is published there with the same ids, even if this node died before its confirm);
    /// `confirmed` hears each confirmed one (a retry reaching another node is answered there with
    /// its ids, not published again).
    public func onSends(attempting: @escaping AttemptAnnouncer,
                        confirmed: @escaping @Sendable (_ from: String, _ cid: String, _ ids: [String]) -> Void) {
        dedup.withLockedValue { $0.listeners = SendListeners(attempting: attempting, confirmed: confirmed) }
    }

    /// A send with a cid another node confirmed: a retry of it here gets its ids.
    public func rememberElsewhere(from: String, cid: String, ids: [String], nowMilliseconds: Int64 = WallClock.milliseconds()) {
        dedup.withLockedValue { $0.cache.rememberElsewhere(from: from, cid: cid, ids: ids, nowMilliseconds: nowMilliseconds) }
    }

    /// Every send with a cid remembered here (this node's and those other nodes told of), for a
    /// node that starts or is heard of for the first time.
    public func recentSends(nowMilliseconds: Int64 = WallClock.milliseconds()) -> [RecentSend] {
        dedup.withLockedValue { $0.cache.recent(nowMilliseconds: nowMilliseconds) }
    }

    /// Sends another node handed over (``recentSends(nowMilliseconds:)`` there): a retry of one
    /// here is answered or published as there.
    public func rememberFromPeer(_ sends: [RecentSend], nowMilliseconds: Int64 = WallClock.milliseconds()) {
        dedup.withLockedValue { $0.cache.rememberFromPeer(sends, nowMilliseconds: nowMilliseconds) }
    }

    /// A send with a cid another node is writing (`ids[i]` for `routes[i]`): a retry of it here
    /// is published with the same ids, unless one is remembered already.
    public func rememberAttemptElsewhere(from: String, cid: String, routes: [String], ids: [String],
                                         nowMilliseconds: Int64 = WallClock.milliseconds()) {
        dedup.withLockedValue {
            $0.cache.rememberAttemptElsewhere(from: from, cid: cid, routes: routes, ids: ids, nowMilliseconds: nowMilliseconds)
        }
    }
}
