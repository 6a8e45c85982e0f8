import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// One connected client, whatever carries its frames: subscriptions, publishes,
/// acks and errors per docs/protocol.md, with the user stamped by Warren and every
/// request checked against the user's access rules.
public final class ClientSession: LiveReceiver, InboxReceiver, Sendable {
    public let user: String
    public let device: String
    public let rules: AccessRules
    let runtime: BridgeRuntime
    let output: any SessionOutput
    let via: Via
    /// The door, for metrics and limit counts.
    let frontend: Frontend
    let logger: Logger

    struct Subscription: Sendable {
        var pattern: TopicPattern
        var mode: SubscriptionMode
        var presence = false
        /// In effect: binding and consumer in place, counted, presence joined. False while it is
        /// being set up; a session that ends meanwhile leaves the undoing to the setting up.
        var active = false
    }

    struct State: Sendable {
        var subscriptions: [String: Subscription] = [:]
        var inbox: InboxConsumer?
        var badFrameTimes: [Int64] = []
        var pendingPublishes = 0
        var closed = false
        var slowConsumer = false
        /// Closed with 1008 already: later refusals are not counted again.
        var closedForPolicy = false
    }

    private let state = NIOLockedValueBox(State())

    /// `frontend`: the door it is counted under, when not the one `via` names (an SSE stream's).
    public init(runtime: BridgeRuntime, user: String, device: String, rules: AccessRules, output: any SessionOutput,
                via: Via = .ws, frontend: Frontend? = nil, logger: Logger) {
        self.frontend = frontend ?? Frontend(clientDoor: via)
        self.runtime = runtime
        self.user = user
        self.device = device
        self.rules = rules
        self.output = output
        self.via = via
        self.logger = logger
    }

    private var me: ObjectIdentifier { ObjectIdentifier(self) }

    /// A client frame that needs waiting for (the broker, the store) before it is answered:
    /// handed back by ``receive(_:)`` to be finished by ``complete(_:)``.
    public struct PendingRequest: Sendable {
        let frame: ClientFrame
    }

    /// Handles one text frame from the client. Publishes are answered asynchronously
    /// (pubacks may come out of order); everything else in order.
    public func handle(_ frame: ByteBuffer) async {
        if let pending = receive(frame) { await complete(pending) }
    }

    /// Handles one text frame at once when nothing needs waiting for (a ping, a publish — its
    /// puback comes later —, an ack, a presence query, a refusal), without a task; otherwise
    /// returns it, to be finished with ``complete(_:)``. Frames are handled in order: the
    /// caller holds the next frame until `complete` returned.
    public func receive(_ frame: ByteBuffer) -> PendingRequest? {
        // Once closed for abuse, whatever the client still sends is not even parsed.
        guard !state.withLockedValue({ $0.closedForPolicy }) else { return nil }
        let parsed: ClientFrame
        do {
            parsed = try ClientFrame.parse(frame.readableBytesView)
        } catch {
            if error.code == .badRoute || error.ref != nil { runtime.metrics.dropped(nil, .invalid) }
            fail(error)
            return nil
        }
        switch parsed {
        case .ping:
            send(ServerFrame.pong)
        case .pub(let request):
            publish(request)
        case .ack(let ids):
            // Each unknown id is answered, but the frame counts once towards
            // `limits.max_bad_frames`: a client re-sending a batch of acks after a reconnect or
            // a requeue is not abusing the protocol a hundred times over.
            var unknown = 0
            for id in ids where !ackInbox(envelopeID: id) {
                unknown += 1
                let error = ProtocolError(.notFound, "no unacknowledged inbox delivery with this id", ref: id)
                if unknown == 1 { fail(error) } else { send(ServerFrame.error(error)) }
            }
        case .presence(let ref, let route):
            do {
                let users = try runtime.presentUsers(route: route, rules: rules)
                send(ServerFrame.presence(ref: ref, route: route, users: users))
            } catch {
                fail(error.answering(ref))
            }
        case .sub(let id, let pattern, .live, false, nil) where subscribeLiveNow(id: id, pattern: pattern):
            send(ServerFrame.subscribed(id: id, pattern: pattern.value, mode: .live, start: SubscriptionStart(at: startID())))
        case .sub, .unsub, .history, .conversations, .read:
            return PendingRequest(frame: parsed)
        }
        return nil
    }

    /// Finishes a frame ``receive(_:)`` handed back.
    public func complete(_ pending: PendingRequest) async {
        switch pending.frame {
        case .sub(let id, let pattern, let mode, let presence, let since):
            do {
                try await subscribe(id: id, pattern: pattern, mode: mode, presence: presence, since: since) { start in
                    send(ServerFrame.subscribed(id: id, pattern: pattern.value, mode: mode, start: start))
                }
            } catch {
                fail(error)
            }
        case .unsub(let id):
            await unsubscribe(id: id)
        case .history(let ref, let route, let before, let limit):
            do {
                let page = try await runtime.store(for: user, via: via).history(route: route, before: before, limit: limit, rules: rules)
                send(StoreAnswer.historyFrame(ref: ref, route: route, page: page))
            } catch {
                fail(error.answering(ref))
            }
        case .conversations(let ref):
            do {
                let list = try await runtime.store(for: user, via: via).list(user: user, rules: rules)
                send(StoreAnswer.conversationsFrame(ref: ref, list: list))
            } catch {
                fail(error.answering(ref))
            }
        case .read(let route, let id):
            do {
                let (key, marker) = try await runtime.markRead(user: user, rules: rules, route: route, id: id, via: via)
                send(StoreAnswer.readFrame(route: key.value, marker: marker))
            } catch {
                fail(error.answering(id))
            }
        case .ping, .pub, .ack, .presence:
            // Handled by `receive`, never handed back.
            break
        }
    }

    /// Reports a refused frame, closing the socket (1008) after too many within a minute.
    public func fail(_ error: ProtocolError) {
        send(ServerFrame.error(error))
        let now = WallClock.milliseconds()
        let tooMany = state.withLockedValue { s -> Bool in
            // Oldest first: drop the expired ones from the front, and never keep more than
            // the limit needs, so a flood of bad frames costs O(1) each.
            let expired = s.badFrameTimes.prefix { $0 < now - 60_000 }.count
            s.badFrameTimes.removeFirst(expired)
            if s.badFrameTimes.count > runtime.limits.maxBadFrames { s.badFrameTimes.removeFirst() }
            s.badFrameTimes.append(now)
            guard !s.closedForPolicy, s.badFrameTimes.count > runtime.limits.maxBadFrames else { return false }
            s.closedForPolicy = true
            return true
        }
        if tooMany {
            runtime.metrics.limitHit(frontend, .badFrames)
            output.close(code: CloseCode.policy, reason: "too many bad frames")
        }
    }

    @discardableResult
    private func send(_ bytes: [UInt8], route: String? = nil) -> Bool {
        send(buffer: ByteBuffer(bytes: bytes), route: route)
    }

    private func send(buffer: ByteBuffer, route: String?) -> Bool {
        guard !output.send(buffer) else { return true }
        slowConsumer(route: route)
        return false
    }

    /// The output is full: closed once with 4008, counted once.
    private func slowConsumer(route: String?) {
        let first = state.withLockedValue { s -> Bool in
            defer { s.slowConsumer = true }
            return !s.slowConsumer
        }
        if first {
            runtime.countSlowConsumer(route: route)
            logger.warning("closing a slow consumer: its outbound buffer is full",
                           metadata: ["limit_bytes": "\(runtime.limits.outboundBufferBytes)"])
            output.close(code: CloseCode.slowConsumer, reason: "slow consumer")
        }
    }

    // MARK: subscriptions

    /// Adds a subscription: checked against the limits and the user's rules, in effect (binding
    /// and consumer in place) when this returns. The WebSocket answers `subscribed` then; a poll
    /// session answers its `201`.
    ///
    /// With `since` (live only), what the subscription missed after that message is recovered
    /// from the store (docs/protocol.md, "Recovery"): live deliveries are held from the moment
    /// the binding is in place, `answer` is called with how the recovery went, the kept
    /// messages go out, then the held ones the replay did not carry, then the live stream.
    /// `answer` is called once the subscription is in effect, with where it starts.
    public func subscribe(id: String, pattern: TopicPattern, mode: SubscriptionMode, presence: Bool = false, since: String? = nil,
                          answer: (SubscriptionStart) -> Void = { _ in }) async throws(ProtocolError) {
        if presence {
            try ClientFrame.checkPresence(pattern, mode: mode, ref: id)
            guard runtime.presence != nil else { throw ProtocolError(.unavailable, "presence is off (presence.enabled = false)", ref: id) }
        }
        if since != nil, mode != .live { throw ProtocolError(.badFrame, "since is for live subscriptions (an inbox keeps what it missed)", ref: id) }
        if let refusal = reserve(id: id, pattern: pattern, mode: mode, presence: presence) {
            if refusal.code == .rateLimited { runtime.metrics.limitHit(frontend, .subscriptions) }
            throw refusal
        }
        let held = since.map { _ in HeldLiveDeliveries(session: self, maxBytes: runtime.limits.outboundBufferBytes) }
        do {
            switch mode {
            case .live:
                let receiver: any LiveReceiver = held ?? self
                try await runtime.hub.subscribe(pattern, subscriber: LiveSubscriber(session: me, subscriptionID: id, receiver: receiver))
            case .inbox:
                guard let inbox = try await ensureInbox(for: id) else { throw ProtocolError(.unavailable, "the connection ended", ref: id) }
                try await inbox.bind(pattern)
                try await inbox.startConsuming()
            }
        } catch {
            state.withLockedValue { _ = $0.subscriptions.removeValue(forKey: id) }
            if let error = error as? ProtocolError { throw error }
            logger.warning("subscribe failed", metadata: ["error": "\(error)"])
            throw ProtocolError(.unavailable, "the broker could not set up the subscription", ref: id)
        }
        // Joined before it counts as in effect, so that whichever of this and `end()` comes
        // second sees the other's work: `end()` leaves for what is active; this undoes itself
        // when the session ended (or the broker ended its inbox) while it was set up — a socket
        // closed during a presence subscription would otherwise stay present for good (its
        // leave came before its join), and an inbox consumer would outlive its session.
        if presence { runtime.presence?.joined(route: pattern.value, user: user, via: via) }
        guard activate(id) else {
            if presence { runtime.presence?.left(route: pattern.value, user: user, via: via) }
            if mode == .live { await runtime.hub.unsubscribe(pattern, subscriber: LiveSubscriber(session: me, subscriptionID: id)) }
            // An inbox: `end()` closed the one it found, and `ensureInbox(for:)` keeps none after it.
            throw ProtocolError(.unavailable, "the connection ended while the subscription was set up", ref: id)
        }
        runtime.metrics.subscriptionAdded(mode)
        let at = mode == .live ? startID() : nil
        guard let since, let held else { return answer(SubscriptionStart(at: at)) }
        let recovery: Recovery
        do {
            recovery = try await runtime.conversations?.recover(pattern: pattern, since: since, rules: rules) ?? Recovery(failure: .notStored)
        } catch {
            // `forbidden`: the subscription goes, as if it had been refused.
            if let sub = state.withLockedValue({ $0.subscriptions.removeValue(forKey: id) }) { await remove(id: id, sub) }
            throw ProtocolError(error.code, error.message, ref: id)
        }
        answer(SubscriptionStart(recovery: recovery, at: at))
        replay(recovery.messages, subscription: id, held: held)
    }

    /// An id standing for now, as Warren's clock has it (``SubscriptionStart/at``).
    private func startID() -> String { runtime.publisher.ids.next(nowMilliseconds: UInt64(WallClock.milliseconds())) }

    /// Sends a recovery's messages, then the held live deliveries it did not carry, and lets
    /// the live stream through.
    private func replay(_ messages: [StoredMessage], subscription id: String, held: HeldLiveDeliveries) {
        var replayed = Set<String>()
        for message in messages where !hasEnded {
            let frame = ByteBuffer(bytes: ServerFrame.message(sub: id, envelope: message.envelope.utf8, redelivered: false))
            guard deliver(frame, inboxID: nil, route: message.route) else { break }
            runtime.metrics.message(message.route, frontend, .out, bytes: frame.readableBytes)
            replayed.insert(message.id)
        }
        let (sent, overflowed) = held.release(skipping: replayed)
        for delivery in sent {
            runtime.metrics.delivered(delivery.routeClass, frontend, count: 1, bytes: delivery.frame.readableBytes,
                                      acceptedAtMilliseconds: delivery.acceptedAt)
        }
        if overflowed { slowConsumer(route: messages.last?.route) }
    }

    /// Marks a reserved subscription in effect; false when the session has ended, or the
    /// subscription was dropped, meanwhile.
    private func activate(_ id: String) -> Bool {
        state.withLockedValue { s in
            guard !s.closed, s.subscriptions[id] != nil else { return false }
            s.subscriptions[id]!.active = true
            return true
        }
    }

    /// Checks a new subscription against the connection's limit and the user's rules and, when
    /// it passes, reserves its id (while the binding is made); the refusal otherwise, with
    /// nothing changed. Every subscription, on either path, passes here.
    private func reserve(id: String, pattern: TopicPattern, mode: SubscriptionMode, presence: Bool) -> ProtocolError? {
        let refusal: ProtocolError? = state.withLockedValue { s in
            if s.subscriptions[id] != nil { return ProtocolError(.conflict, "subscription id already in use", ref: id) }
            if s.subscriptions.count >= runtime.limits.maxSubscriptions {
                return ProtocolError(.rateLimited, "at most \(runtime.limits.maxSubscriptions) subscriptions per connection", ref: id)
            }
            return nil
        }
        if let refusal { return refusal }
        guard rules.canSubscribe(pattern) else {
            return ProtocolError(.forbidden, "not allowed to subscribe to \(pattern.value)", ref: id)
        }
        state.withLockedValue { $0.subscriptions[id] = Subscription(pattern: pattern, mode: mode, presence: presence) }
        return nil
    }

    /// A live subscription (no presence) taken at once, when ``reserve(id:pattern:mode:presence:)``
    /// admits it and the hub needs no broker call for it (``LiveHub/subscribeNow(_:subscriber:)``);
    /// false, with nothing changed, otherwise — the frame then takes the async path, which also
    /// answers (and counts) any refusal.
    private func subscribeLiveNow(id: String, pattern: TopicPattern) -> Bool {
        guard reserve(id: id, pattern: pattern, mode: .live, presence: false) == nil else { return false }
        guard runtime.hub.subscribeNow(pattern, subscriber: LiveSubscriber(session: me, subscriptionID: id, receiver: self)) else {
            state.withLockedValue { _ = $0.subscriptions.removeValue(forKey: id) }
            return false
        }
        guard activate(id) else {
            // Ended on another thread meanwhile (it left this one to us).
            let hub = runtime.hub, subscriber = LiveSubscriber(session: me, subscriptionID: id)
            Task { await hub.unsubscribe(pattern, subscriber: subscriber) }
            return true
        }
        runtime.metrics.subscriptionAdded(.live)
        return true
    }

    /// The session's inbox, opened now if it has none (for subscription `id`); nil once the
    /// session has ended. A device past the user's limit of devices is refused (`rate_limited`).
    private func ensureInbox(for id: String) async throws -> InboxConsumer? {
        if let existing = state.withLockedValue({ $0.inbox }) { return existing }
        guard runtime.devices.admit(user: user, device: device) else {
            runtime.metrics.limitHit(frontend, .devices)
            throw ProtocolError(.rateLimited, "at most \(runtime.devices.maxDevices) inbox devices per user on this node "
                                + "(limits.max_devices_per_user; a device counts until inbox.expires_ms after its last use)", ref: id)
        }
        let inbox = try await runtime.openInbox(user: user, device: device, receiver: self, near: output.eventLoop)
        let winner = state.withLockedValue { s -> InboxConsumer? in
            if s.closed { return nil }
            if let other = s.inbox { return other }
            s.inbox = inbox
            return inbox
        }
        if winner !== inbox { await inbox.close() }
        return winner
    }

    private func unsubscribe(id: String) async {
        guard let sub = state.withLockedValue({ $0.subscriptions.removeValue(forKey: id) }) else {
            return fail(ProtocolError(.notFound, "no subscription with this id", ref: id))
        }
        await remove(id: id, sub)
        send(ServerFrame.unsubscribed(id: id))
    }

    private func remove(id: String, _ sub: Subscription) async {
        if sub.active {
            runtime.metrics.subscriptionRemoved(sub.mode)
            if sub.presence { runtime.presence?.left(route: sub.pattern.value, user: user, via: via) }
        }
        switch sub.mode {
        case .live:
            await runtime.hub.unsubscribe(sub.pattern, subscriber: LiveSubscriber(session: me, subscriptionID: id))
        case .inbox:
            // The binding stays while another inbox subscription of this socket uses the pattern.
            let (inbox, stillUsed) = state.withLockedValue { s in
                (s.inbox, s.subscriptions.values.contains { $0.mode == .inbox && $0.pattern == sub.pattern })
            }
            if let inbox, !stillUsed { try? await inbox.unbind(sub.pattern) }
        }
    }

    // MARK: publishing

    private func publish(_ request: PublishRequest) {
        if let refusal = runtime.admitPublish(request, from: user, rules: rules, via: frontend) { return fail(refusal) }
        let admitted = state.withLockedValue { s -> Bool in
            guard s.pendingPublishes < runtime.limits.maxPendingPublishes else { return false }
            s.pendingPublishes += 1
            return true
        }
        guard admitted else {
            runtime.metrics.limitHit(frontend, .pendingPublishes)
            runtime.metrics.dropped(request.routes.first?.value, .rateLimited)
            return fail(ProtocolError(.rateLimited, "too many publishes awaiting confirmation", ref: request.cid))
        }
        // Written to the broker now, in the order the client sent them; confirms are awaited apart.
        let pending: PendingPublish
        do {
            pending = try runtime.publisher.submit(request, from: user, via: via, maxMessageBytes: runtime.limits.maxMessageBytes)
        } catch {
            state.withLockedValue { $0.pendingPublishes -= 1 }
            if error.code == .tooLarge {
                runtime.metrics.dropped(request.routes.first?.value, .tooLarge)
                runtime.metrics.limitHit(frontend, .messageSize)
            }
            return fail(error)
        }
        // The puback is written from the confirm's callback: no task per publish.
        pending.whenDone { [self] result in
            state.withLockedValue { $0.pendingPublishes -= 1 }
            switch result {
            case .success(let ids): send(ServerFrame.puback(cid: request.cid, ids: ids, multicast: request.multicast))
            case .failure(let error): fail(error)
            }
        }
    }

    // MARK: deliveries

    /// The output's loop for live deliveries (a poll session's; a WebSocket's output hands its
    /// frames to its socket's loop itself).
    public var liveLoop: (any EventLoop)? { output.liveDeliveryLoop }

    public func deliverLive(_ delivery: LiveDelivery) -> Frontend? {
        deliver(delivery.frame, inboxID: nil, route: delivery.routeKey.value) ? frontend : nil
    }

    /// A `msg` frame to the output; a full output closes a WebSocket with 4008.
    private func deliver(_ frame: ByteBuffer, inboxID: String?, route: String) -> Bool {
        guard !output.deliver(frame, inboxID: inboxID) else { return true }
        slowConsumer(route: route)
        return false
    }

    private func delivered(_ route: RouteClass, bytes: Int, acceptedAt: Int64) {
        runtime.metrics.delivered(route, frontend, count: 1, bytes: bytes, acceptedAtMilliseconds: acceptedAt)
    }

    public func deliverInbox(envelopeID: String, envelope: ByteBuffer, routeKey: String, routeClass: RouteClass, redelivered: Bool,
                             acceptedAt: Int64) {
        guard let subID = inboxSubscription(for: routeKey) else {
            // Not a route this user may read (``inboxSubscription(for:)``): never shown, and
            // acked rather than left to come back to every session of the device.
            ackInbox(envelopeID: envelopeID)
            var key = routeKey
            runtime.metrics.dropped(routeKey, key.withUTF8 { TopicMatcher.isValidKey($0) } ? .forbidden : .invalid)
            return
        }
        let frame = ByteBuffer(bytes: ServerFrame.message(sub: subID, envelope: envelope.readableBytesView, redelivered: redelivered))
        if deliver(frame, inboxID: envelopeID, route: routeKey) {
            delivered(routeClass, bytes: frame.readableBytes, acceptedAt: acceptedAt)
        }
    }

    /// The inbox subscription (by id, the first) whose pattern matches `routeKey`; when none
    /// does, the first inbox subscription — but only if the user may read the route. An inbox
    /// queue keeps its bindings while its device is away (that is how it gathers what was
    /// missed), so it may still be bound with a pattern the user's rules no longer allow
    /// (`acl.subscribe` narrowed, or a token's `warren` claim): nil then, as for a routing key
    /// that is no valid route. No allocation: the matching reads the key's bytes in place.
    private func inboxSubscription(for routeKey: String) -> String? {
        var key = routeKey
        return key.withUTF8 { bytes -> String? in
            guard TopicMatcher.isValidKey(bytes) else { return nil }
            let (match, first) = state.withLockedValue { s -> (String?, String?) in
                var match: String?, first: String?
                for (id, sub) in s.subscriptions where sub.mode == .inbox {
                    if first.map({ id < $0 }) ?? true { first = id }
                    if sub.pattern.matches(validKeyBytes: bytes), match.map({ id < $0 }) ?? true { match = id }
                }
                return (match, first)
            }
            if let match { return match }
            guard rules.subscribe.contains(where: { $0.matches(validKeyBytes: bytes) }) else { return nil }
            return first ?? routeKey
        }
    }

    // MARK: inbox control (acks by id on a socket; leases and hand-backs on a poll session)

    /// Acks the inbox delivery that carried `envelopeID`; false if none is outstanding.
    @discardableResult
    public func ackInbox(envelopeID: String) -> Bool {
        state.withLockedValue { $0.inbox }?.ack(envelopeID: envelopeID) == true
    }

    /// Hands an inbox delivery back to RabbitMQ (its lease ran out, or the answer that leased it
    /// never reached the client): it comes again, redelivered.
    @discardableResult
    public func releaseInbox(envelopeID: String) -> Bool {
        state.withLockedValue { $0.inbox }?.release(envelopeID: envelopeID) == true
    }

    /// Whether the session has an inbox that is consuming now.
    public var inboxConsuming: Bool { state.withLockedValue { $0.inbox }?.isConsuming == true }

    /// Stops consuming the inbox, handing back every unacknowledged delivery but `keeping`.
    public func pauseInbox(keeping: Set<String>) async {
        await state.withLockedValue { $0.inbox }?.stop(keeping: keeping)
    }

    /// Consumes the inbox again after ``pauseInbox(keeping:)``.
    public func resumeInbox() async throws {
        try await state.withLockedValue { $0.inbox }?.startConsuming()
    }

    /// The broker ended the inbox consumer (an operator deleted the queue, say): never
    /// silently. Each inbox subscription is reported `unavailable` with its id and removed, so
    /// subscribing again declares the inbox anew.
    public func inboxHandedBack(count: Int) {
        runtime.metrics.limitHit(frontend, .ackTimeout, count: count)
        logger.info("inbox deliveries not acknowledged within inbox.ack_timeout handed back; they come again",
                    metadata: ["count": "\(count)"])
    }

    public func inboxEnded(_ error: AMQPError?) {
        guard let error else { return }
        let (dropped, inbox) = state.withLockedValue { s -> ([String], InboxConsumer?) in
            guard !s.closed else { return ([], nil) }
            let inboxSubscriptions = s.subscriptions.filter { $0.value.mode == .inbox }
            let ids = inboxSubscriptions.map(\.key).sorted()
            for id in ids { s.subscriptions[id] = nil }
            defer { s.inbox = nil }
            // One still being set up undoes itself and answers its own error.
            return (ids.filter { inboxSubscriptions[$0]!.active }, s.inbox)
        }
        guard inbox != nil else { return }
        logger.warning("inbox consumer ended by the broker", metadata: ["error": "\(error)", "subscriptions": "\(dropped.count)"])
        runtime.metrics.subscriptionRemoved(.inbox, count: dropped.count)
        for id in dropped {
            send(ServerFrame.error(ProtocolError(.unavailable, "the broker ended this inbox subscription (\(error)); subscribe again",
                                                 ref: id)))
        }
        Task { await inbox?.close() }
    }

    /// Whether ``end()`` has begun.
    var hasEnded: Bool { state.withLockedValue { $0.closed } }

    /// The client went away: drop live subscriptions and hand unacknowledged inbox deliveries back.
    public func end() async {
        let (subs, inbox): ([String: Subscription], InboxConsumer?) = state.withLockedValue { s in
            guard !s.closed else { return ([:], nil) }
            s.closed = true
            let subs = s.subscriptions
            s.subscriptions.removeAll()
            return (subs, s.inbox)
        }
        // One still being set up is left to its `subscribe`, which sees the session closed.
        for (id, sub) in subs where sub.active {
            runtime.metrics.subscriptionRemoved(sub.mode)
            if sub.presence { runtime.presence?.left(route: sub.pattern.value, user: user, via: via) }
            if sub.mode == .live {
                await runtime.hub.unsubscribe(sub.pattern, subscriber: LiveSubscriber(session: me, subscriptionID: id))
            }
        }
        await inbox?.close()
    }
}
