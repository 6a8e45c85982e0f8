import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

/// HTTP polling sessions (docs/protocol.md), served by any node.
///
/// A poll session is the same ``ClientSession`` a WebSocket has, behind a ``PollOutput`` that
/// buffers deliveries for the next poll: its live subscriptions are fed by the node's live
/// fan-out (one broker copy per node, however many pollers), its inbox subscriptions consume
/// the user's inbox queue on a shared channel. The session string is a signed token naming
/// the user, device and subscriptions, so any node can open the session at its first poll
/// there; the node that created it buffers from its `201` on.
///
/// What an answer hands out of the inbox is leased under the answer's cursor: acked to
/// RabbitMQ when the client acks the cursor, handed back when `poll.lease` runs out. A node
/// stops consuming a session's inbox ``inboxIdleGrace`` after the last poll there (handing
/// back what waited unanswered, so a client that moved to another node gets it there), and
/// drops the session after `poll.session_ttl` without a poll. One timer sweeps every session
/// of the node once a second; a parked poll costs a scheduled timer, no task or thread.
public final class PollService: Sendable {
    /// How long a node keeps consuming a session's inbox with nobody polling it here (ms).
    public static let inboxIdleGrace: Int64 = 5_000
    /// How long a deleted session stays `not_found` on the node that deleted it (ms).
    static let tombstoneLifetime: Int64 = 3_600_000
    /// Tombstones kept at most: past it the older half goes (one user deleting sessions as fast
    /// as it opens them would otherwise grow the table for an hour without bound).
    let tombstoneLimit: Int

    public let runtime: BridgeRuntime
    let settings: PollSettings
    let codec: PollSessionCodec
    let nodeID: String
    let logger: Logger
    /// The logger writes debug lines (asked once: its handler's level, through an existential,
    /// was read on every parked poll).
    private let logsParks: Bool
    let loop: any EventLoop
    /// Sessions open on this node, by session string.
    private let sessions = NIOLockedValueBox<[PollSessionKey: PollSession]>([:])
    /// Session ids deleted here, with when (ms) and in which order.
    private let deleted = NIOLockedValueBox<(tombstones: [String: (at: Int64, order: UInt64)], next: UInt64)>(([:], 0))
    private let sweeper = NIOLockedValueBox<RepeatedTask?>(nil)
    /// When parked polls time out.
    let deadlines: PollDeadlines

    public init(runtime: BridgeRuntime, settings: PollSettings, codec: PollSessionCodec, nodeID: String, logger: Logger,
                loop: any EventLoop = MultiThreadedEventLoopGroup.singleton.any(), tombstoneLimit: Int = 100_000) {
        self.runtime = runtime
        self.tombstoneLimit = max(2, tombstoneLimit)
        self.settings = settings
        self.codec = codec
        self.nodeID = nodeID
        self.logger = logger
        self.logsParks = logger.logLevel <= .debug
        self.loop = loop
        self.deadlines = PollDeadlines(loop: loop, longest: .seconds(Int64(settings.maxWait)))
        let task = loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) { [weak self] _ in
            self?.sweep(now: WallClock.milliseconds())
        }
        sweeper.withLockedValue { $0 = task }
        runtime.peers?.onSessionDeletedElsewhere { [weak self] id in
            guard let self else { return }
            Task { await self.forget(id, "deleted on another node") }
        }
        runtime.peers?.onAckForwarded { [weak self] token, cursor, polledAt in
            guard let self, let open = sessions.withLockedValue({ $0[token] }) else { return }
            ackHere(cursor, on: open, polledAt: polledAt)
            // Its client polled there: a poll still parked here from before is answered now
            // (with nothing, almost always: it parked on an empty buffer), not left to take a
            // delivery for a connection gone without a word; taken, that delivery sat leased
            // until `poll.lease` if the client never came back here.
            guard let polledAt else { return }
            open.output.wake(parkedBefore: polledAt)
            // And this node stops consuming its inbox now, not ``inboxIdleGrace`` after its last
            // poll here: meanwhile the two nodes would share the inbox's deliveries, and those
            // waiting here would reach the client after later ones it read there (or go back
            // when it returns, PollBuffer.polledFromElsewhere).
            guard open.hasInbox, open.client.inboxConsuming, open.away(since: polledAt) else { return }
            logger.debug("its client polls another node: the inbox is not consumed here any more",
                         metadata: ["session": "\(open.descriptor.id.prefix(8))"])
            Task { await self.pauseInbox(of: open) }
        }
    }

    deinit { sweeper.withLockedValue { $0?.cancel() } }

    /// Deleted sessions this node still answers `not_found` for.
    var tombstoneCount: Int { deleted.withLockedValue { $0.tombstones.count } }

    /// Sessions open on this node.
    public var sessionCount: Int { sessions.withLockedValue { $0.count } }

    /// Long-polls parked on this node now.
    public var parkedPolls: Int { sessions.withLockedValue { $0.values.filter { $0.output.hasWaiter }.count } }

    // MARK: create / delete

    /// `POST /v1/poll`: checks every subscription, opens the session here (bindings and
    /// consumers in place before the answer), and returns its string; `too_large` when that
    /// string would be longer than a poll's URL can carry (``PollSessionCodec/maxTokenBytes``).
    ///
    /// `home`: the event loop of the connection asking, where the session's polls will be answered
    /// (``PollOutput/liveDeliveryLoop``).
    ///
    /// `since`: per subscription id, the message after which what it missed is recovered
    /// (docs/protocol.md, "Recovery"); where each subscription started, and how its `since`
    /// went, is returned. Not part of the session
    /// string: another node opening the session later starts from its first poll there.
    public func create(user: String, device: String, policy: AccessPolicy, subscriptions: [PollSubscription],
                       since: [String: String] = [:], home: (any EventLoop)? = nil) async throws(ProtocolError)
        -> (session: String, expiresIn: Int, starts: [String: SubscriptionStart])
    {
        _ = try validate(subscriptions, rules: policy.resolved(for: user))
        for id in since.keys where !subscriptions.contains(where: { $0.id == id }) {
            throw ProtocolError(.badFrame, "since names no subscription of the session", ref: id)
        }
        let descriptor = PollSessionDescriptor(id: Self.randomID(), user: user, device: device, subscriptions: subscriptions)
        let token: String
        do { token = try await codec.encode(descriptor) } catch {
            throw ProtocolError(.internal, "cannot sign the session: \(error)", ref: nil)
        }
        guard token.utf8.count <= PollSessionCodec.maxTokenBytes else {
            throw ProtocolError(.tooLarge, "these subscriptions make a session string of \(token.utf8.count) bytes, more than the "
                                + "\(PollSessionCodec.maxTokenBytes) a poll's URL can carry: subscribe with fewer or shorter patterns "
                                + "(one pattern such as #.\(user).# covers every conversation of the user's)", ref: nil)
        }
        let recoveries = Recoveries()
        _ = try await open(descriptor, token: token, policy: policy, home: home, since: since, recoveries: recoveries)
        return (token, settings.sessionTTL, recoveries.all)
    }

    /// The cursor of no answer yet, which the `201` carries: a first poll that acks it says the
    /// client read nothing of the session on this node, so an answer lost before it comes again
    /// (``ack(_:on:token:polling:)``), as a later poll's cursor does for the answers after it.
    public var firstCursor: String { "\(nodeID).0" }

    /// `DELETE /v1/poll/<session>`: drops this node's buffer at once and hands the inbox's
    /// unacknowledged deliveries back (the inbox itself is kept). The session is `not_found`
    /// here from now on, and, told through the presence exchange, on the other nodes too (with
    /// presence off as well).
    public func delete(session token: String, user: String) async throws(ProtocolError) {
        let d = try await descriptor(token, user: user)
        await forget(d.id, "deleted")
        runtime.peers?.sessionDeleted(d.id)
    }

    /// Ends the session `id` on this node, if it is open here, and answers it `not_found` from
    /// now on.
    func forget(_ id: String, _ reason: String) async {
        deleted.withLockedValue { t in
            t.next += 1
            t.tombstones[id] = (WallClock.milliseconds(), t.next)
            guard t.tombstones.count > tombstoneLimit else { return }
            let kept = t.tombstones.sorted { $0.value.order > $1.value.order }.prefix(tombstoneLimit / 2)
            t.tombstones = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
        }
        let open = sessions.withLockedValue { s -> [PollSession] in
            let matching = s.filter { $0.value.descriptor.id == id }
            for (key, session) in matching {
                s[key] = nil
                session.markRemoved()
            }
            return Array(matching.values)
        }
        for session in open { await end(session, reason) }
    }

    /// `POST /v1/poll/<session>/ack` (and `?ack=` on a poll): acks what the answers up to `cursor`
    /// delivered (``ack(_:on:token:)``).
    public func ack(session token: String, user: String, cursor: String) async throws(ProtocolError) {
        if let open = sessions.withLockedValue({ $0[token] }), open.descriptor.user == user {
            ack(cursor, on: open, token: token)
            return
        }
        _ = try await descriptor(token, user: user)
        ack(cursor, on: nil, token: token)
    }

    /// Acks `cursor` here if this node made it; another node's cursor is handed to that node
    /// (through the presence exchange's queues), which acks it if it has the session open. A
    /// load balancer without stickiness sends a poller's polls, with the cursor of the answer
    /// before, to any node: those acks were dropped, and every inbox batch came again after
    /// `poll.lease`, for as long as the poller polled. Anything else is a no-op.
    ///
    /// `polling`: the cursor came with a poll, so it names the last answer the client read, and
    /// the answers its node made after it, before the poll, never reached the client: their
    /// inbox deliveries are handed back (``PollBuffer/unreceived(after:before:)``). Before
    /// 2026-11-29 the next cursor acked them, and they were lost (seen with the Swift client,
    /// whose HTTP stack sends a poll again on a new connection when the one it was parked on is
    /// cut).
    private func ack(_ cursor: String, on session: PollSession?, token: String, polling: Bool = false) {
        // Only inbox deliveries are leased: a session without an inbox (the same subscriptions on
        // every node) has nothing to ack here or anywhere.
        if let session, !session.hasInbox { return }
        // Here every answer made before this poll: a client polls one request at a time.
        if let session, ackHere(cursor, on: session, polledAt: polling ? .max : nil) { return }
        // A first cursor (`<node>.0`) of another node's without a poll acks nothing: not sent on.
        guard let owner = Self.node(of: cursor), owner != nodeID else { return }
        // The client read its last answer on another node: what answers made here before now
        // still lease, a later cursor of this node does not ack (``PollBuffer/ack(upTo:)``).
        // And what waits here came while it read there: back to RabbitMQ (PollBuffer.polledFromElsewhere).
        if polling, let session {
            for id in session.output.withBuffer({ $0.polledFromElsewhere() }) { session.client.releaseInbox(envelopeID: id) }
        }
        guard polling || !cursor.hasSuffix(".0") else { return }
        runtime.peers?.forwardAck(session: token, cursor: cursor, to: owner, polledAt: polling ? WallClock.milliseconds() : nil)
    }

    /// Acks what the answers up to `cursor` delivered, if the cursor is this node's (else false);
    /// with `polledAt` (a poll's ack), hands back what the answers after it made before then held.
    @discardableResult
    private func ackHere(_ cursor: String, on session: PollSession, polledAt: Int64? = nil) -> Bool {
        guard let seq = Self.sequence(of: cursor, node: nodeID) else { return false }
        let (acked, lost) = session.output.withBuffer { b in
            let (acked, unread) = b.ack(upTo: seq)
            return (acked, unread + (polledAt.map { b.unreceived(after: seq, before: $0) } ?? []))
        }
        for id in acked { session.client.ackInbox(envelopeID: id) }
        for id in lost { session.client.releaseInbox(envelopeID: id) }
        return true
    }

    /// The node a cursor `<node>.<seq>` names; nil for anything malformed.
    static func node(of cursor: String) -> String? {
        guard let dot = cursor.utf8.lastIndex(of: UInt8(ascii: ".")) else { return nil }
        let node = String(cursor[..<dot]), seq = cursor[cursor.index(after: dot)...]
        guard RouteKey.isValidWord(node), !seq.isEmpty, seq.utf8.count <= 20, seq.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            return nil
        }
        return node
    }

    /// The answer sequence number in a cursor `<node>.<seq>` made by `node`; nil for another
    /// node's cursor or anything malformed. Read on the raw bytes (every poll sends one).
    static func sequence(of cursor: String, node: String) -> UInt64? {
        var cursor = cursor, node = node
        return cursor.withUTF8 { b -> UInt64? in
            // Both sides' bytes (`String.UTF8View`'s element by element showed in poll profiles).
            guard let dot = b.lastIndex(of: UInt8(ascii: ".")), dot + 1 < b.count,
                  node.withUTF8({ $0.elementsEqual(UnsafeBufferPointer(rebasing: b[..<dot])) }) else { return nil }
            var seq: UInt64 = 0
            for byte in b[(dot + 1)...] {
                guard byte >= 48, byte <= 57 else { return nil }
                let (times10, o1) = seq.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(UInt64(byte - 48))
                guard !o1, !o2 else { return nil }
                seq = sum
            }
            return seq
        }
    }

    // MARK: polling

    /// The session a connection polled last (``poll(session:user:policy:wait:max:ack:to:last:repeated:now:)``):
    /// opaque to the frontend, which keeps it for the connection's next poll.
    public struct LastPolled: Sendable {
        fileprivate let session: PollSession
    }

    /// How ``poll(session:user:policy:wait:max:ack:to:last:repeated:now:)`` took a poll.
    public enum Polled: Sendable {
        /// Not a session open here with its inbox consuming and the poll's policy: open it here
        /// with ``prepare(session:user:policy:home:)`` (which says why it cannot be), then poll again.
        case elsewhere
        /// Answered already (the sink was answered).
        case answered
        /// Parked on `output` as `id`; the sink is answered when a delivery, the deadline, a poll
        /// taking its place or a drain ends it (``PollOutput/wake(parked:)`` ends it early).
        case parked(PollOutput, UInt64)
    }

    /// `GET /v1/poll/<session>`: every buffered delivery up to `max`, waiting up to `wait`
    /// seconds for the first; `ack` acks what the answers up to that cursor delivered. Taken
    /// without suspending, for a session open on this node (else ``Polled/elsewhere``), so a
    /// frontend answers it on its event loop. `sink` is answered exactly once, from any
    /// thread; when it is not ``PollAnswerSink/isAlive`` by then, nothing is taken (the
    /// connection went) and the answer has no items.
    ///
    /// `policy`: the poll's own (the configured one, or its token's `warren` claim), which the
    /// session on this node must have been opened with (``prepare(session:user:policy:home:)``).
    ///
    /// `token` is the session string as the request's target carries it (no `String` is made
    /// for it).
    ///
    /// `last`: the session this connection polled last, kept by it. A poll naming the same
    /// session string takes it without the node's table (its lock is shared by every event
    /// loop, and its lookup hashes and compares the string); set to the session polled now.
    ///
    /// `repeated`: the poll repeats the one that set `last` but for its cursor (the frontend
    /// compared their bytes, and the identity is that poll's): its session string, user and
    /// policy are not compared again.
    ///
    /// `now`: the wall clock as the frontend read it for this poll (``WallClock``).
    public func poll(session token: Substring, user: String, policy: AccessPolicy, wait: Int, max: Int, ack cursor: String?,
                     to sink: any PollAnswerSink, last: inout LastPolled?, repeated: Bool = false,
                     now: Int64 = WallClock.milliseconds()) -> Polled {
        // Its user's, under its policy, with its inbox (if any) consumed here; then started, in
        // one lock with the check that it is still in the node's table.
        func startable(_ s: PollSession, checked: Bool) -> Bool {
            (checked || (s.descriptor.user == user && s.policy == policy)) && (!s.hasInbox || s.client.inboxConsuming)
        }
        let session: PollSession
        if let known = last?.session, repeated || PollSessionKey(known.token) == PollSessionKey(token),
           startable(known, checked: repeated), known.pollStarted(now: now, listed: true) {
            session = known
        } else if let found = sessions.withLockedValue({ $0[token] }), startable(found, checked: false), found.pollStarted(now: now) {
            session = found
        } else {
            last = nil
            return .elsewhere
        }
        if last?.session !== session { last = LastPolled(session: session) }
        if let cursor { ack(cursor, on: session, token: session.token, polling: true) }
        let request = PollRequest(sink: sink, max: Swift.max(1, min(max, settings.maxBatch)), node: session.node,
                                  leaseMilliseconds: Int64(settings.lease) * 1000)
        let wait = min(wait, settings.maxWait)
        switch session.output.answerOrPark(request, timeout: wait > 0 ? .seconds(Int64(wait)) : nil, deadlines: deadlines) {
        case .answered(let answer):
            sink.answer(answer)
            return .answered
        case .parked(let id):
            if logsParks { logger.debug("long-poll waiting", metadata: ["session": "\(session.descriptor.id.prefix(8))"]) }
            return .parked(session.output, id)
        }
    }

    /// Opens the session on this node if it is not open here yet (its first poll here) and
    /// resumes its inbox if the sweeper paused it, so that ``poll(session:user:policy:wait:max:ack:to:last:repeated:now:)``
    /// can take the next poll.
    /// `home`: the event loop of the connection polling (``create(user:device:policy:subscriptions:home:)``).
    public func prepare(session token: String, user: String, policy: AccessPolicy, home: (any EventLoop)? = nil)
        async throws(ProtocolError)
    {
        try await resumeInbox(of: session(for: token, user: user, policy: policy, home: home))
    }

    private func resumeInbox(of session: PollSession) async throws(ProtocolError) {
        guard session.hasInbox, !session.client.inboxConsuming else { return }
        do { try await session.client.resumeInbox() } catch {
            throw ProtocolError(.unavailable, "the broker could not serve the inbox", ref: nil)
        }
        session.output.withBuffer { $0.inboxResumed() }
    }

    /// Stops consuming the session's inbox on this node: its leased deliveries stay leased
    /// (acked by their cursor, or handed back when it runs out); the ones still waiting for an
    /// answer go back to RabbitMQ. The next poll here consumes it again.
    private func pauseInbox(of session: PollSession) async {
        await session.client.pauseInbox(keeping: session.output.withBuffer { $0.leasedIDs })
        _ = session.output.withBuffer { $0.removeWaitingInbox() }
    }

    /// Answers every poll parked on this node now (a drain).
    public func answerParkedPolls() {
        for session in sessions.withLockedValue({ Array($0.values) }) { session.output.wake() }
    }

    // MARK: sessions on this node

    /// The session open here for `token`, or opened now (its first poll on this node).
    ///
    /// A session is served under the policy of the poll that opened it here. A poll with
    /// another (a token whose `warren` claim changed) ends it here and opens it afresh under
    /// its own, as a first poll on this node would be: refused `forbidden` if a subscription is
    /// no longer allowed, else served with the new rules (an inbox then shows only what they
    /// let the user read). Its live buffer goes, as when moving nodes; its leased inbox
    /// deliveries go back to RabbitMQ and come again.
    private func session(for token: String, user: String, policy: AccessPolicy, home: (any EventLoop)? = nil)
        async throws(ProtocolError) -> PollSession
    {
        if let open = sessions.withLockedValue({ $0[token] }) {
            // A session that is not the caller's is as unknown as one that does not exist.
            guard open.descriptor.user == user else { throw ProtocolError(.notFound, "no such session", ref: nil) }
            if open.policy == policy { return open }
            let removed = sessions.withLockedValue { s -> Bool in
                guard s[token] === open else { return false }
                s[token] = nil
                open.markRemoved()
                return true
            }
            if removed { await end(open, "polled under other access rules") }
            return try await session(for: token, user: user, policy: policy, home: home)
        }
        let d = try await descriptor(token, user: user)
        return try await open(d, token: token, policy: policy, home: home)
    }

    /// Opens a session on this node: a ``ClientSession`` with every subscription in effect.
    private func open(_ d: PollSessionDescriptor, token: String, policy: AccessPolicy, home: (any EventLoop)?,
                      since: [String: String] = [:], recoveries: Recoveries? = nil) async throws(ProtocolError) -> PollSession
    {
        if deleted.withLockedValue({ $0.tombstones[d.id] }) != nil { throw ProtocolError(.notFound, "no such session (deleted)", ref: nil) }
        let rules = policy.resolved(for: d.user)
        let parsed = try validate(d.subscriptions, rules: rules)
        // A session open here holds one of its user's connection slots on this node, as a
        // WebSocket does, until it is deleted or dropped (else one user could open sessions,
        // each with its subscriptions and inbox consumer, without bound).
        let users = runtime.users
        guard users.openConnection(d.user) else {
            runtime.metrics.limitHit(.poll, .connections)
            throw ProtocolError(.rateLimited, "at most \(users.maxConnections) connections (WebSockets, event streams and poll sessions) per user on this node",
                                ref: nil)
        }
        let metrics = runtime.metrics
        let now = WallClock.milliseconds()
        let output = PollOutput(maxLength: settings.maxLength, home: home, now: now) { _ in metrics.dropped(nil, .slowConsumer) }
        var logger = self.logger
        logger[metadataKey: "user"] = "\(d.user)"
        let client = ClientSession(runtime: runtime, user: d.user, device: d.device, rules: rules, output: output, via: .poll,
                                   logger: logger)
        let session = PollSession(descriptor: d, token: token, policy: policy, client: client, output: output, node: nodeID)
        do {
            for (id, pattern, mode, presence) in parsed {
                try await client.subscribe(id: id, pattern: pattern, mode: mode, presence: presence, since: since[id]) { start in
                    recoveries?.add(id, start)
                }
            }
        } catch {
            if session.markEnded() { users.closeConnection(d.user) }
            await client.end()
            throw error
        }
        let winner = sessions.withLockedValue { s -> PollSession in
            if let other = s[token] { return other }
            s[token] = session
            return session
        }
        if winner !== session { await end(session, nil) }  // another request opened it first
        // A DELETE that came while this was being opened found nothing here to drop: drop it now.
        if deleted.withLockedValue({ $0.tombstones[d.id] }) != nil {
            let removed = sessions.withLockedValue { s -> Bool in
                guard s[token] === winner else { return false }
                s[token] = nil
                winner.markRemoved()
                return true
            }
            if removed { await end(winner, "deleted") }
            throw ProtocolError(.notFound, "no such session (deleted)", ref: nil)
        }
        if winner === session {
            // One line per session opened on this node, as a WebSocket's connect (never per poll).
            logger.info("poll session opened", metadata: ["user": "\(d.user)", "device": "\(d.device)", "session": "\(d.id.prefix(8))"])
        }
        return winner
    }

    private func end(_ session: PollSession, _ reason: String?) async {
        guard close(session, reason) else { return }
        await session.client.end()
    }

    /// What ending a session does at once: marks it ended, frees its user's connection slot and
    /// answers its parked poll; true the first time (then ``ClientSession/end()`` is owed).
    /// `reason`: why, for the log line a WebSocket's close has too (nil: it never opened here).
    private func close(_ session: PollSession, _ reason: String?) -> Bool {
        guard session.markEnded() else { return false }
        if let reason {
            logger.info("poll session closed", metadata: ["user": "\(session.descriptor.user)", "session": "\(session.descriptor.id.prefix(8))",
                                                          "reason": "\(reason)"])
        }
        runtime.users.closeConnection(session.descriptor.user)
        session.output.close(code: CloseCode.normal, reason: "session ended")
        return true
    }

    /// Once a second: hands back inbox leases that ran out, stops consuming the inbox of a
    /// session nobody polls here, and drops sessions idle past `poll.session_ttl`.
    func sweep(now: Int64) {
        let ttl = Int64(settings.sessionTTL) * 1000
        let all = sessions.withLockedValue { Array($0) }
        var ending: [PollSession] = []
        var pausing: [PollSession] = []
        for (token, session) in all {
            for id in session.output.withBuffer({ $0.expired(now: now) }) { session.client.releaseInbox(envelopeID: id) }
            let idle = session.idle(now: now)
            if idle > ttl {
                let removed = sessions.withLockedValue { s -> Bool in
                    guard s[token] === session else { return false }
                    s[token] = nil
                    session.markRemoved()
                    return true
                }
                if removed, close(session, "no poll for poll.session_ttl") { ending.append(session) }
            } else if idle > Self.inboxIdleGrace, session.hasInbox, session.client.inboxConsuming {
                pausing.append(session)
            }
        }
        deleted.withLockedValue { d in d.tombstones = d.tombstones.filter { now - $0.value.at < Self.tombstoneLifetime } }
        guard !ending.isEmpty || !pausing.isEmpty else { return }
        Task {
            for session in ending { await session.client.end() }
            for session in pausing { await pauseInbox(of: session) }
        }
    }

    // MARK: plumbing

    /// Where each subscription started, and how its `since` went, while a session was opened.
    final class Recoveries: Sendable {
        private let found = NIOLockedValueBox<[String: SubscriptionStart]>([:])
        func add(_ id: String, _ start: SubscriptionStart) { found.withLockedValue { $0[id] = start } }
        var all: [String: SubscriptionStart] { found.withLockedValue { $0 } }
    }

    /// The subscriptions, parsed and checked against the user's rules.
    private func validate(_ subscriptions: [PollSubscription], rules: AccessRules)
        throws(ProtocolError) -> [(String, TopicPattern, SubscriptionMode, Bool)]
    {
        guard subscriptions.count <= runtime.limits.maxSubscriptions else {
            runtime.metrics.limitHit(.poll, .subscriptions)
            throw ProtocolError(.rateLimited, "at most \(runtime.limits.maxSubscriptions) subscriptions per session", ref: nil)
        }
        var seen = Set<String>()
        var parsed: [(String, TopicPattern, SubscriptionMode, Bool)] = []
        for s in subscriptions {
            guard !s.id.isEmpty, s.id.utf8.count <= 64 else { throw ProtocolError(.badFrame, "subscription ids are 1-64 bytes", ref: s.id) }
            guard seen.insert(s.id).inserted else { throw ProtocolError(.conflict, "duplicate subscription id", ref: s.id) }
            guard let mode = SubscriptionMode(rawValue: s.mode) else { throw ProtocolError(.badFrame, "mode must be live or inbox", ref: s.id) }
            let pattern: TopicPattern
            do { pattern = try TopicPattern(s.pattern) } catch { throw ProtocolError(.badRoute, error.description, ref: s.id) }
            guard rules.canSubscribe(pattern) else { throw ProtocolError(.forbidden, "not allowed to subscribe to \(s.pattern)", ref: s.id) }
            if s.presence == true { try ClientFrame.checkPresence(pattern, mode: mode, ref: s.id) }
            parsed.append((s.id, pattern, mode, s.presence == true))
        }
        return parsed
    }

    private func descriptor(_ token: String, user: String) async throws(ProtocolError) -> PollSessionDescriptor {
        // A session that is not the caller's is as unknown as one that does not exist.
        guard let d = await codec.decode(token), d.user == user else {
            throw ProtocolError(.notFound, "no such session", ref: nil)
        }
        return d
    }

    static func randomID() -> String {
        var rng = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(rng.next(), radix: 16).leftPadded(to: 16) }.joined()
    }
}

extension String {
    func leftPadded(to n: Int) -> String { count >= n ? self : String(repeating: "0", count: n - count) + self }
}
