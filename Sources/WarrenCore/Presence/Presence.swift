import AMQPClient
import Atomics
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Presence across every node (docs/protocol.md), gathered through RabbitMQ and nothing else.
///
/// Each node binds an exclusive queue of its own to the fanout exchange
/// `<amqp.exchange>.presence`, announces every change of its own presence there at once, and
/// its whole state every third of `presence.timeout`; what it hears goes into its
/// ``PresenceBook``, which answers queries and decides which join and leave envelopes are due.
/// A node not heard from within the timeout is forgotten (its users leave); a draining node
/// says goodbye after its users' leaves.
///
/// With `presence.enabled = false` a node still has its queue, for what else nodes tell each
/// other (a poll session deleted, a poll's ack of another node's cursor), and announces nothing.
public final class Presence: AMQPDeliverySink, Sendable {
    let node: String
    let settings: PresenceSettings
    let exchange: String
    /// This node's own channel (its queue is exclusive to the connection it is on): consumes the
    /// queue and carries the announcements; replaced when the broker closes it.
    let channel: ReplaceableChannel
    let publisher: Publisher
    let metrics: WarrenMetrics
    let logger: Logger
    /// Why the broker blocks publishing on this node's connection, if it does: announcements
    /// wait then (the whole state goes out again once it lifts).
    let blockedReason: @Sendable () -> String?
    /// The loop of the connection this node's presence and publishing channels are on. The
    /// envelopes and announcements the book's events call for are handed to it, under the book's
    /// lock, and written from it in that order (a write made on the loop goes out at once, one
    /// from another thread is queued behind whatever the loop has to do: two threads' writes
    /// could swap). nil: written inline (unit tests).
    let loop: (any EventLoop)?
    private let book: NIOLockedValueBox<PresenceBook>
    /// Announcements in order, each after the envelope it follows is confirmed (used on
    /// ``loop``, where the confirms come too; the lock is for the first announcement at start).
    private let outbox = NIOLockedValueBox(PresenceOutbox())
    private let ticker = NIOLockedValueBox<Task<Void, Never>?>(nil)
    private let badMessages = NIOLockedValueBox(0)
    /// Where other nodes' news of poll sessions goes: `sessionDeleted` is told the id of a poll
    /// session another node deleted (``onSessionDeletedElsewhere(_:)``), `ackForwarded` a session
    /// string and a cursor of this node's that a poll on another node acked (``onAckForwarded(_:)``).
    /// A struct in the box, not the closures themselves: a closure kept straight in a generic box
    /// gains a conversion wrapper at every `withLockedValue`, and each call goes through all of
    /// them (`HandlerIndirectionTests`).
    private struct PeerHandlers {
        var sessionDeleted: (@Sendable (String) -> Void)?
        var ackForwarded: (@Sendable (String, String, Int64?) -> Void)?
    }
    private let handlers = NIOLockedValueBox(PeerHandlers())
    /// Whether another node is known (its state heard, not yet expired or gone): only then are
    /// sends with a cid told (``sending(from:cid:routes:ids:)``, ``sent(from:cid:ids:)``).
    private let othersKnown = ManagedAtomic(false)
    /// The queues of the other nodes known (``noteOthers()``): where a send being written is told.
    private let otherQueues = NIOLockedValueBox<[String]>([])

    /// `reopen` opens another channel on the same connection when the broker closed `channel`
    /// (nil: never replaced).
    init(node: String, settings: PresenceSettings, exchange: String, channel: any BrokerChannel,
         reopen: (@Sendable () async throws -> any BrokerChannel)? = nil, publisher: Publisher, loop: (any EventLoop)? = nil,
         metrics: WarrenMetrics, logger: Logger, blockedReason: @escaping @Sendable () -> String? = { nil }) {
        self.blockedReason = blockedReason
        self.loop = loop
        self.node = node
        self.settings = settings
        self.exchange = exchange
        self.channel = ReplaceableChannel(channel, open: reopen)
        self.publisher = publisher
        self.metrics = metrics
        self.logger = logger
        self.book = NIOLockedValueBox(PresenceBook(node: node))
        publisher.onSends(attempting: { [weak self] from, cid, routes, ids in self?.sending(from: from, cid: cid, routes: routes, ids: ids) },
                          confirmed: { [weak self] from, cid, ids in self?.sent(from: from, cid: cid, ids: ids) })
    }

    var timeoutMilliseconds: Int64 { Int64(settings.timeoutSeconds) * 1000 }

    /// Binds this node's queue, starts hearing the others, announces itself, and starts the
    /// periodic announcements and expiry.
    func start() async throws {
        try await listen()
        guard settings.enabled else { return }
        announce(.state(node: node, entries: [], starting: true))
        let interval = max(1, settings.timeoutSeconds / 3)
        ticker.withLockedValue { $0 = Task { [weak self] in
            var second = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard let self else { return }
                second += 1
                self.expire()
                if second % interval == 0 { self.announceState() }
            }
        } }
    }

    /// The node drains: its users' leaves have been published as their sessions ended; the
    /// others forget it at once.
    public func stop() {
        guard settings.enabled else { return }
        ticker.withLockedValue { $0?.cancel() }
        serially { [self] in outbox.withLockedValue { send($0.close(goodbye: .goodbye(node: node))) } }
    }

    /// Runs `body` on ``loop`` after everything handed to it before, even when called on it
    /// (at once without a loop).
    private func serially(_ body: @escaping @Sendable () -> Void) {
        guard let loop else { return body() }
        loop.execute(body)
    }

    // MARK: local sessions

    public func joined(route: String, user: String, via: Via) {
        let entry = PresenceEntry(route: route, user: user)
        apply(entry, present: true, via: via) { $0.localJoined(entry) }
    }

    public func left(route: String, user: String, via: Via) {
        let entry = PresenceEntry(route: route, user: user)
        let now = WallClock.milliseconds()
        apply(entry, present: false, via: via) { $0.localLeft(entry, at: now) }
    }

    // MARK: sends confirmed, poll sessions deleted

    /// A send with a cid this node confirmed, told to the other nodes (when there are any: a
    /// lone node sends nothing) so that a retry reaching one of them gets these ids instead of
    /// a second publish. Needs presence on (the nodes know of each other by its announcements);
    /// a node started in the last third of `presence.timeout` may not know the others yet.
    func sent(from: String, cid: String, ids: [String]) {
        guard settings.enabled, othersKnown.load(ordering: .relaxed) else { return }
        let message = PresenceAnnouncement.sent(node: node, from: from, cid: cid, ids: ids)
        serially { [self] in announce(message) }
    }

    /// A send with a cid this node is about to write, as the other nodes are told of it (when
    /// there are any), and their queues: written just before it, on the same channel, so a retry
    /// reaching one of them keeps these ids even if this node dies before the confirm.
    func sending(from: String, cid: String, routes: [String], ids: [String]) -> (body: ByteBuffer, queues: [String])? {
        guard settings.enabled, othersKnown.load(ordering: .relaxed) else { return nil }
        let queues = otherQueues.withLockedValue { $0 }
        guard !queues.isEmpty else { return nil }
        return (ByteBuffer(bytes: PresenceAnnouncement.sending(node: node, from: from, cid: cid, routes: routes, ids: ids).encoded()), queues)
    }

    /// Tells every other node that the poll session `id` was deleted here: a node that has it
    /// open ends it at once (its presence too) rather than after `poll.session_ttl`, and
    /// answers it `not_found` from then on, as this node does.
    public func sessionDeleted(_ id: String) {
        serially { [self] in announce(.sessionDeleted(node: node, session: id)) }
    }

    /// `handler` is called with the id of each poll session another node deleted.
    public func onSessionDeletedElsewhere(_ handler: @escaping @Sendable (String) -> Void) {
        handlers.withLockedValue { $0.sessionDeleted = handler }
    }

    /// Hands an ack of `cursor` to `owner`, the node that made the cursor (straight to its queue
    /// through the default exchange; dropped by the broker if that node is gone, as the ack
    /// would be); `polledAt`, when a poll carried it, is when that poll arrived here.
    public func forwardAck(session token: String, cursor: String, to owner: String, polledAt: Int64?) {
        let message = PresenceAnnouncement.ackForwarded(node: node, session: token, cursor: cursor, polledAt: polledAt)
        serially { [self] in
            guard blockedReason() == nil else { return }
            _ = try? channel.channel.startPublish(ByteBuffer(bytes: message.encoded()), exchange: "", routingKey: Self.queue(of: owner),
                                                  mandatory: false,
                                                  properties: BasicProperties(contentType: "application/json", deliveryMode: 1), timeout: nil)
        }
    }

    /// Sends `other` every send with a cid remembered here, ``PresenceAnnouncement/maxRecentSends``
    /// to a message, straight to its queue (through the default exchange, as a forwarded ack).
    private func handOverRecentSends(to other: String) {
        let sends = publisher.recentSends()
        guard !sends.isEmpty else { return }
        let queue = Self.queue(of: other)
        serially { [self] in
            guard blockedReason() == nil else { return }
            for start in stride(from: 0, to: sends.count, by: PresenceAnnouncement.maxRecentSends) {
                let chunk = Array(sends[start..<min(start + PresenceAnnouncement.maxRecentSends, sends.count)])
                let message = PresenceAnnouncement.sends(node: node, entries: chunk)
                _ = try? channel.channel.startPublish(ByteBuffer(bytes: message.encoded()), exchange: "", routingKey: queue, mandatory: false,
                                                      properties: BasicProperties(contentType: "application/json", deliveryMode: 1),
                                                      timeout: nil)
            }
        }
        logger.debug("handed recent sends over", metadata: ["node": "\(other)", "sends": "\(sends.count)"])
    }

    /// `handler` is called with the session string, the cursor and, for a poll's, the poll's
    /// arrival time of each ack another node forwarded here.
    public func onAckForwarded(_ handler: @escaping @Sendable (String, String, Int64?) -> Void) {
        handlers.withLockedValue { $0.ackForwarded = handler }
    }

    /// The queue a node hears presence on (and forwarded acks).
    static func queue(of node: String) -> String { "warren.presence.\(node)" }

    /// The users present on `route` on every node.
    public func users(route: String) -> [String] { book.withLockedValue { $0.users(route: route) } }

    /// (route, user) pairs present anywhere, by route class: the `warren_presence_users` gauge.
    func recordCounts() {
        let entries = book.withLockedValue { $0.allEntries }
        metrics.presence(entries.map(\.route))
    }

    /// Takes a local change into the book and, under the same lock, hands its envelope and its
    /// announcement to ``loop``: this node's envelopes and announcements leave in the order the
    /// book took its events (a leave here and a join heard from another node cannot swap on the
    /// way out), the announcement only once the broker confirmed the envelope (``PresenceOutbox``).
    private func apply(_ entry: PresenceEntry, present: Bool, via: Via, _ change: (inout PresenceBook) -> PresenceBook.Outcome) {
        let announced = book.withLockedValue { book -> Bool in
            let outcome = change(&book)
            guard outcome.announce else { return false }
            let message = PresenceAnnouncement.change(node: node, entry: entry, present: present, published: outcome.publish != nil)
            serially { [self] in announce(message, after: outcome.publish.flatMap { publish($0, via: via) }) }
            return true
        }
        if announced { recordCounts() }
    }

    /// The transient `presence` envelope, from the user, on the route; nil if it could not be sent.
    @discardableResult
    private func publish(_ change: PresenceBook.Change, via: Via) -> PendingPublish? {
        let (entry, state): (PresenceEntry, String)
        switch change {
        case .join(let e): (entry, state) = (e, "join")
        case .leave(let e): (entry, state) = (e, "leave")
        }
        guard let route = try? RouteKey(entry.route) else { return nil }
        let request = PublishRequest(routes: [route], multicast: false, type: "presence",
                                     body: .object([(key: "user", value: .string(entry.user)), (key: "state", value: .string(state))]),
                                     cid: nil, transient: true, headers: [])
        do {
            return try publisher.submit(request, from: entry.user, via: via, maxMessageBytes: 65_536)
        } catch {
            logger.warning("could not publish a presence change", metadata: ["route": "\(entry.route)", "error": "\(error)"])
            return nil
        }
    }

    /// Sends `message` after every announcement before it, and after `envelope` is confirmed.
    private func announce(_ message: PresenceAnnouncement, after envelope: PendingPublish? = nil) {
        let gate = outbox.withLockedValue { outbox -> Int? in
            let (gate, ready) = outbox.add(message, gated: envelope != nil)
            send(ready)
            return gate
        }
        guard let gate, let envelope else { return }
        // Confirmed or failed (nacked, timed out, channel gone) alike: the announcement goes.
        envelope.whenSettled { [self] in outbox.withLockedValue { send($0.confirmed(gate)) } }
    }

    /// Writes announcements to the presence exchange (under the outbox's lock: in order).
    private func send(_ messages: [PresenceAnnouncement]) {
        guard !messages.isEmpty, blockedReason() == nil else { return }
        for message in messages {
            _ = try? channel.channel.startPublish(ByteBuffer(bytes: message.encoded()), exchange: exchange, routingKey: "", mandatory: false,
                                                  properties: BasicProperties(contentType: "application/json", deliveryMode: 1),
                                                  timeout: nil)
        }
    }

    private func announceState() {
        book.withLockedValue { book in
            let message = PresenceAnnouncement.state(node: node, entries: book.localEntries)
            serially { [self] in announce(message) }
        }
        recordCounts()
    }

    private func expire() {
        let now = WallClock.milliseconds()
        let leaves = book.withLockedValue { book -> Int in
            let leaves = book.expire(now: now, timeout: timeoutMilliseconds)
            // The vanished node's door is unknown: these leaves are Warren's own, marked `amqp`.
            if !leaves.isEmpty { serially { [self] in for change in leaves { publish(change, via: .amqp) } } }
            return leaves.count
        }
        noteOthers()
        guard leaves > 0 else { return }
        logger.info("a node went quiet; its users left", metadata: ["leaves": "\(leaves)"])
        recordCounts()
    }

    private func noteOthers() {
        let queues = book.withLockedValue { $0.remote.keys.sorted().map(Self.queue(of:)) }
        otherQueues.withLockedValue { $0 = queues }
        othersKnown.store(!queues.isEmpty, ordering: .relaxed)
    }

    // MARK: other nodes (on the broker's event loop: ``loop``)

    public func deliver(_ message: AMQPMessage) {
        guard let announcement = PresenceAnnouncement.decode(message.body.readableBytesView) else {
            let n = badMessages.withLockedValue { b -> Int in
                b += 1
                return b
            }
            if n == 1 || n % 1000 == 0 {
                logger.warning("ignoring a malformed presence message", metadata: ["exchange": "\(exchange)", "count": "\(n)"])
            }
            return
        }
        switch announcement {
        case .sessionDeleted(let other, let id):
            if other != node { handlers.withLockedValue { $0.sessionDeleted }?(id) }
            return
        case .ackForwarded(_, let token, let cursor, let polledAt):
            handlers.withLockedValue { $0.ackForwarded }?(token, cursor, polledAt)
            return
        case .sent(let other, let from, let cid, let ids):
            if other != node { publisher.rememberElsewhere(from: from, cid: cid, ids: ids) }
            return
        case .sending(let other, let from, let cid, let routes, let ids):
            if other != node { publisher.rememberAttemptElsewhere(from: from, cid: cid, routes: routes, ids: ids) }
            return
        case .sends(let other, let entries):
            if other != node { publisher.rememberFromPeer(entries) }
            return
        case .state, .change, .goodbye: guard settings.enabled else { return }
        }
        let now = WallClock.milliseconds()
        var newcomer = false
        let owed = book.withLockedValue { book -> Bool in
            switch announcement {
            case .state(let other, let entries, let starting):
                newcomer = other != node && (starting || book.remote[other] == nil)
                book.received(state: entries, from: other, at: now)
            case .change(let other, let entry, let present, let published):
                // A leave its node did not publish, now present nowhere (the user left two nodes
                // at once), or a join its node did not publish that crossed this node's leave.
                // The other node's door is unknown here: the envelope is Warren's own, `amqp`.
                guard let owed = book.received(entry, present: present, published: published, from: other, at: now) else { return false }
                serially { [self] in publish(owed, via: .amqp) }
                return true
            case .goodbye(let other): book.receivedGoodbye(from: other)
            case .sessionDeleted, .ackForwarded, .sent, .sending, .sends: break
            }
            return false
        }
        noteOthers()
        if owed { recordCounts() }
        // A node not known until now, or starting (back from a restart): it learns of this one at once,
        // not a third of the timeout later, and so tells it of its sends with a cid from now on;
        // and of those it remembers from before (docs/protocol.md's five minutes), which it was not told
        // of, having started since or been gone.
        if newcomer {
            announceState()
            handOverRecentSends(to: announcement.node)
        }
    }

    /// Declares the exchange (presence is held by live nodes only: it goes with the last of
    /// them, or with the last queue bound to it — declared again here, after this node's queue
    /// was deleted, say), declares and binds this node's queue, and consumes it.
    private func listen() async throws {
        let queue = Self.queue(of: node)
        let channel = self.channel.channel
        try await channel.declareAutoDeleted(exchange: exchange, type: "fanout")
        try await channel.queueDeclare(queue, durable: false, exclusive: true, autoDelete: true, passive: false, arguments: [:],
                                       recordForRecovery: true)
        try await channel.queueBind(queue: queue, exchange: exchange, routingKey: "", arguments: [:], recordForRecovery: true)
        try await channel.consume(queue: queue, consumerTag: nil, noAck: true, exclusive: true, arguments: [:], sink: self)
    }

    /// The consumer ended. Cancelled by the broker (the queue was deleted), or its channel closed
    /// by a channel error (a new one takes its place), the exchange and queue are declared, bound
    /// and consumed again, and the whole state announced.
    public func finish(_ error: AMQPError?) {
        BrokerRetry.setUpAgain(after: error, "the presence consumer", channel: channel.channel, replacing: channel, logger: logger,
                               { [self] in try await listen() }, afterwards: { [self] in if settings.enabled { announceState() } })
    }
}
