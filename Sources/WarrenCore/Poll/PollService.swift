import AMQPClient
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

/// One message in a poll answer.
public struct PollMessage: Sendable {
    public var sub: String
    public var envelope: ByteBuffer
    public var redelivered: Bool
    public var route: String
}

/// HTTP polling sessions (DESIGN §5), served by any node.
///
/// A session is a durable queue with `x-expires` (its live patterns) plus, for
/// inbox subscriptions, the user's inbox queue. A node serving a session consumes
/// its queues into a buffer while the client keeps polling there (``NodeSession``);
/// a poll takes what is buffered or waits for the first arrival — no sleeping, no
/// thread held. What a poll hands out
/// is leased: acked to RabbitMQ when the client acks the cursor, handed back
/// when the lease runs out (so a client that moved to another node still gets it).
public final class PollService: Sendable {
    public let runtime: BridgeRuntime
    let settings: PollSettings
    let codec: PollSessionCodec
    let nodeID: String
    let logger: Logger
    let ids = UUIDv7Generator()
    private let sessions = NIOLockedValueBox<[String: NodeSession]>([:])

    public init(runtime: BridgeRuntime, settings: PollSettings, codec: PollSessionCodec, nodeID: String, logger: Logger) {
        self.runtime = runtime
        self.settings = settings
        self.codec = codec
        self.nodeID = nodeID
        self.logger = logger
    }

    var sessionArguments: FieldTable {
        ["x-expires": .int64(Int64(settings.sessionTTL) * 1000), "x-max-length": .int64(Int64(settings.maxLength)),
         "x-overflow": .string("drop-head")]
    }

    // MARK: create / delete

    /// `POST /v1/poll`: checks every subscription against the ACL, creates the queues, returns the session.
    public func create(user: String, device: String, rules: AccessRules, subscriptions: [PollSubscription])
        async throws(ProtocolError) -> (session: String, expiresIn: Int)
    {
        guard !subscriptions.isEmpty else { throw ProtocolError(.badFrame, "subscriptions must not be empty", ref: nil) }
        guard subscriptions.count <= runtime.limits.maxSubscriptions else {
            throw ProtocolError(.rateLimited, "at most \(runtime.limits.maxSubscriptions) subscriptions per session", ref: nil)
        }
        var seen = Set<String>()
        var parsed: [(PollSubscription, TopicPattern, SubscriptionMode)] = []
        for s in subscriptions {
            guard !s.id.isEmpty, s.id.utf8.count <= 64 else { throw ProtocolError(.badFrame, "subscription ids are 1-64 bytes", ref: s.id) }
            guard seen.insert(s.id).inserted else { throw ProtocolError(.conflict, "duplicate subscription id", ref: s.id) }
            guard let mode = SubscriptionMode(rawValue: s.mode) else { throw ProtocolError(.badFrame, "mode must be live or inbox", ref: s.id) }
            let pattern: TopicPattern
            do { pattern = try TopicPattern(s.pattern) } catch { throw ProtocolError(.badRoute, error.description, ref: s.id) }
            guard rules.canSubscribe(pattern) else { throw ProtocolError(.forbidden, "not allowed to subscribe to \(s.pattern)", ref: s.id) }
            parsed.append((s, pattern, mode))
        }
        let descriptor = PollSessionDescriptor(id: Self.randomID(), user: user, device: device, subscriptions: subscriptions)
        do {
            let channel = try await runtime.connection.openChannel()
            defer { Task { try? await channel.close() } }
            try await channel.queueDeclare(descriptor.queue, durable: true, arguments: sessionArguments, recordForRecovery: false)
            let inboxQueue = InboxSettings.queueName(user: user, device: device)
            if parsed.contains(where: { $0.2 == .inbox }) {
                try await channel.queueDeclare(inboxQueue, durable: true, arguments: runtime.inbox.arguments, recordForRecovery: false)
            }
            for (_, pattern, mode) in parsed {
                try await channel.queueBind(queue: mode == .live ? descriptor.queue : inboxQueue, exchange: runtime.exchange,
                                            routingKey: pattern.value, recordForRecovery: false)
            }
            return (try await codec.encode(descriptor), settings.sessionTTL)
        } catch {
            logger.warning("poll session setup failed", metadata: ["error": "\(error)"])
            throw ProtocolError(.unavailable, "the broker could not set up the session", ref: nil)
        }
    }

    /// `DELETE /v1/poll/<session>`: deletes the session's queue (an inbox is kept).
    public func delete(session token: String, user: String) async throws(ProtocolError) {
        let d = try await descriptor(token, user: user)
        let state = sessions.withLockedValue { $0.removeValue(forKey: d.id) }
        await state?.close()
        do {
            let channel = try await runtime.connection.openChannel()
            defer { Task { try? await channel.close() } }
            try await channel.queueDelete(d.queue)
        } catch {
            throw ProtocolError(.unavailable, "the broker could not delete the session", ref: nil)
        }
    }

    /// `POST /v1/poll/<session>/ack` (and `?ack=` on a poll): acks what the answers up to `cursor` delivered.
    public func ack(session token: String, user: String, cursor: String) async throws(ProtocolError) {
        let d = try await descriptor(token, user: user)
        sessions.withLockedValue { $0[d.id] }?.ack(cursor: cursor)
    }

    // MARK: polling

    /// `GET /v1/poll/<session>`: up to `max` messages, waiting up to `wait` seconds for the first.
    public func poll(session token: String, user: String, wait: Int, max: Int, ack cursor: String?)
        async throws(ProtocolError) -> (messages: [PollMessage], cursor: String)
    {
        let d = try await descriptor(token, user: user)
        let state = try await nodeSession(d)
        if let cursor { state.ack(cursor: cursor) }
        let wait = min(wait, settings.maxWait)
        let max = Swift.max(1, min(max, settings.maxBatch))
        do {
            return try await state.serial.run { [self] in
                let deliveries = try await state.take(max: max, wait: .seconds(Int64(wait)))
                let cursor = state.lease(deliveries, for: .seconds(Int64(settings.lease)))
                let messages = deliveries.map { message($0, d) }
                for m in messages {
                    runtime.metrics.message(m.route, .poll, .out, bytes: m.envelope.readableBytes)
                }
                return (messages, cursor)
            }
        } catch let error as ProtocolError {
            throw error
        } catch {
            // The session's channel broke (its queue expired or was deleted, or the link dropped):
            // forget it and close its channel, so nothing stays leased or consuming on it.
            if let dropped = sessions.withLockedValue({ $0.removeValue(forKey: d.id) }) { await dropped.close() }
            if case AMQPError.channelClosed(let reason) = error, reason.replyCode == ReplyCode.notFound {
                throw ProtocolError(.notFound, "no such session (expired or deleted)", ref: nil)
            }
            throw ProtocolError(.unavailable, "the broker could not serve the poll", ref: nil)
        }
    }

    private func message(_ delivery: (queue: String, message: AMQPMessage), _ d: PollSessionDescriptor) -> PollMessage {
        let m = delivery.message
        runtime.metrics.message(m.routingKey, .amqp, .in, bytes: m.body.readableBytes)
        runtime.metrics.delivered(m.routingKey, acceptedAtMilliseconds: EnvelopeAMQPMapping.acceptedAt(m.properties) ?? Clock.milliseconds())
        let envelope = EnvelopeAMQPMapping.clientEnvelope(m, ids: ids).bytes
        let mode: SubscriptionMode = delivery.queue == d.queue ? .live : .inbox
        let key = try? RouteKey(m.routingKey)
        let candidates = d.subscriptions.filter { $0.mode == mode.rawValue }
        let match = candidates.first { s in key.map { (try? TopicPattern(s.pattern))?.matches($0) ?? false } ?? false }
        let sub = match ?? candidates.first
        return PollMessage(sub: sub.map { $0.id.isEmpty ? $0.pattern : $0.id } ?? m.routingKey, envelope: envelope,
                           redelivered: m.redelivered, route: m.routingKey)
    }

    private func descriptor(_ token: String, user: String) async throws(ProtocolError) -> PollSessionDescriptor {
        // A session that is not the caller's is as unknown as one that does not exist.
        guard let d = await codec.decode(token), d.user == user else {
            throw ProtocolError(.notFound, "no such session", ref: nil)
        }
        return d
    }

    private func nodeSession(_ d: PollSessionDescriptor) async throws(ProtocolError) -> NodeSession {
        if let existing = sessions.withLockedValue({ $0[d.id] }) { return existing }
        let channel: AMQPChannel
        do {
            channel = try await runtime.connection.openChannel()
            // The session must still exist: a passive declare fails with 404 otherwise.
            try await channel.queueDeclare(d.queue, passive: true)
        } catch AMQPError.channelClosed(let reason) where reason.replyCode == ReplyCode.notFound {
            throw ProtocolError(.notFound, "no such session (expired or deleted)", ref: nil)
        } catch {
            throw ProtocolError(.unavailable, "the broker is not reachable", ref: nil)
        }
        var queues = [d.queue]
        if d.subscriptions.contains(where: { $0.mode == SubscriptionMode.inbox.rawValue }) {
            queues.insert(InboxSettings.queueName(user: d.user, device: d.device), at: 0)
        }
        let state = NodeSession(id: d.id, nodeID: nodeID, channel: channel, queues: queues, prefetch: settings.maxBatch, logger: logger)
        let winner = sessions.withLockedValue { s -> NodeSession in
            if let other = s[d.id] { return other }
            s[d.id] = state
            return state
        }
        if winner !== state { await state.close() }
        return winner
    }

    static func randomID() -> String {
        var rng = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(rng.next(), radix: 16).leftPadded(to: 16) }.joined()
    }
}

extension String {
    func leftPadded(to n: Int) -> String { count >= n ? self : String(repeating: "0", count: n - count) + self }
}

/// A session's state on this node: its channel, consumers and buffer, the leased batches,
/// a serial lane for polls.
///
/// The first long-poll starts a consumer on each of the session's queues (prefetch
/// `poll.max_batch`) that stays while the client keeps polling here: deliveries collect in a
/// buffer, and a poll takes what is buffered or waits for the first arrival. A poll then
/// costs no broker round trip at all, where `basic.get` cost one per message and a consumer
/// per poll two more; under load that decides whether hundreds of pollers keep up. A node
/// stops consuming ``idleGrace`` after the last poll here ended and hands what it buffered
/// back to RabbitMQ, so a client that moved to another node gets it there.
final class NodeSession: Sendable {
    /// How long a node keeps consuming for a session nobody polls here any more.
    static let idleGrace: Duration = .seconds(5)

    let id: String
    let nodeID: String
    let channel: AMQPChannel
    /// Inbox queue first (if any), then the session's own queue.
    let queues: [String]
    let prefetch: UInt16
    let serial = SerialExecutor()
    let logger: Logger
    let buffer = PollBuffer()
    private let batches = NIOLockedValueBox<(next: UInt64, leased: [UInt64: [DeliveryTag]])>((1, [:]))
    /// The running consumers' tags (empty: not consuming), and a count of polls for the idle timer.
    private let consumers = NIOLockedValueBox<(tags: [String], polls: UInt64)>(([], 0))

    init(id: String, nodeID: String, channel: AMQPChannel, queues: [String], prefetch: Int, logger: Logger) {
        self.logger = logger
        self.id = id
        self.nodeID = nodeID
        self.channel = channel
        self.queues = queues
        self.prefetch = UInt16(clamping: max(1, prefetch))
    }

    /// What is waiting now, or — if nothing is and `wait` > 0 — what arrives first.
    func take(max: Int, wait: Duration) async throws -> [(queue: String, message: AMQPMessage)] {
        let poll = consumers.withLockedValue { c -> UInt64 in
            c.polls += 1
            return c.polls
        }
        defer { armIdleTimer(after: poll) }
        buffer.rearm()
        if consumers.withLockedValue({ $0.tags.isEmpty }) || buffer.consumerEnded {
            guard wait > .zero else {
                // An interval poll on a node not consuming for the session: take what is there.
                var taken: [(queue: String, message: AMQPMessage)] = []
                for queue in queues {
                    while taken.count < max, let m = try await channel.get(queue: queue) { taken.append((queue, m)) }
                }
                return taken
            }
            try await startConsuming()
        }
        var taken = buffer.take(max: max)
        guard taken.isEmpty, wait > .zero else { return taken }
        logger.debug("long-poll waiting", metadata: ["session": "\(id.prefix(8))"])
        // A drain answers held long-polls at once (with what they have).
        await withGracefulShutdownHandler {
            await buffer.wait(timeout: wait)
        } onGracefulShutdown: {
            self.buffer.wake()
        }
        taken = buffer.take(max: max)
        return taken
    }

    private func startConsuming() async throws {
        buffer.consumerEnded = false
        try await channel.basicQos(prefetchCount: prefetch)
        var tags: [String] = []
        for queue in queues {
            tags.append(try await channel.consume(queue: queue, sink: buffer.sink(for: queue)))
        }
        consumers.withLockedValue { $0.tags = tags }
    }

    /// After ``idleGrace`` without another poll here: stop consuming and hand the buffer back.
    private func armIdleTimer(after poll: UInt64) {
        Task { [weak self] in
            guard (try? await Task.sleep(for: Self.idleGrace)) != nil, let self else { return }
            try? await self.serial.run {
                let tags = self.consumers.withLockedValue { c -> [String] in
                    guard c.polls == poll else { return [] }
                    defer { c.tags = [] }
                    return c.tags
                }
                guard !tags.isEmpty else { return }
                for tag in tags { try? await self.channel.cancel(consumerTag: tag) }
                for m in self.buffer.takeAll() { self.channel.reject(m.message.deliveryTag, requeue: true) }
            }
        }
    }

    /// Leases `deliveries` under a new cursor; they go back to RabbitMQ when the lease runs out.
    func lease(_ deliveries: [(queue: String, message: AMQPMessage)], for duration: Duration) -> String {
        let seq = batches.withLockedValue { b -> UInt64 in
            let seq = b.next
            b.next += 1
            if !deliveries.isEmpty { b.leased[seq] = deliveries.map(\.message.deliveryTag) }
            return seq
        }
        if !deliveries.isEmpty {
            Task { [weak self] in
                guard (try? await Task.sleep(for: duration)) != nil else { return }
                self?.expire(seq)
            }
        }
        return "\(nodeID).\(seq)"
    }

    /// Acks every batch up to `cursor`, if the cursor is this node's; otherwise a no-op.
    func ack(cursor: String) {
        guard let dot = cursor.lastIndex(of: "."), cursor[..<dot] == nodeID, let seq = UInt64(cursor[cursor.index(after: dot)...]) else {
            return
        }
        let tags = batches.withLockedValue { b -> [DeliveryTag] in
            let due = b.leased.keys.filter { $0 <= seq }
            return due.flatMap { b.leased.removeValue(forKey: $0) ?? [] }
        }
        for tag in tags { channel.ack(tag) }
    }

    private func expire(_ seq: UInt64) {
        guard let tags = batches.withLockedValue({ $0.leased.removeValue(forKey: seq) }) else { return }
        for tag in tags { channel.nack(tag, requeue: true) }
    }

    func close() async { try? await channel.close() }
}

/// Deliveries of a session's consumers on this node, waiting for the next poll.
final class PollBuffer: Sendable {
    private struct State {
        var items: [(queue: String, message: AMQPMessage)] = []
        var waiter: CheckedContinuation<Void, Never>?
        var woken = false
        var consumerEnded = false
    }
    private let state = NIOLockedValueBox(State())

    final class Sink: AMQPDeliverySink {
        let buffer: PollBuffer
        let queue: String
        init(buffer: PollBuffer, queue: String) {
            self.buffer = buffer
            self.queue = queue
        }
        func deliver(_ message: AMQPMessage) { buffer.add(queue, message) }
        func finish(_ error: AMQPError?) {
            buffer.consumerEnded = true
            buffer.wake()
        }
    }

    func sink(for queue: String) -> Sink { Sink(buffer: self, queue: queue) }

    /// A consumer ended (cancelled by the broker, its channel closed): the next poll starts anew.
    var consumerEnded: Bool {
        get { state.withLockedValue { $0.consumerEnded } }
        set { state.withLockedValue { $0.consumerEnded = newValue } }
    }

    func add(_ queue: String, _ message: AMQPMessage) {
        state.withLockedValue { $0.items.append((queue, message)) }
        wake()
    }

    /// Wakes the waiting poll, or the next one to wait (a drain that came first).
    func wake() {
        let w = state.withLockedValue { s -> CheckedContinuation<Void, Never>? in
            s.woken = true
            defer { s.waiter = nil }
            return s.waiter
        }
        w?.resume()
    }

    /// Forgets an earlier wake, at the start of a poll.
    func rearm() { state.withLockedValue { $0.woken = false } }

    /// Waits until something is buffered, ``wake()`` is called, or `timeout` passes.
    func wait(timeout: Duration) async {
        let timer = Task { [weak self] in
            // A cancelled timer (the wait ended otherwise) must not wake anyone.
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self?.wake()
        }
        defer { timer.cancel() }
        await withCheckedContinuation { c in
            let now = state.withLockedValue { s -> Bool in
                if s.woken || !s.items.isEmpty { return true }
                s.waiter = c
                return false
            }
            if now { c.resume() }
        }
    }

    /// Up to `max` buffered deliveries, oldest first; the rest stay for the next poll.
    func take(max: Int) -> [(queue: String, message: AMQPMessage)] {
        state.withLockedValue { s in
            let n = min(max, s.items.count)
            let taken = Array(s.items.prefix(n))
            s.items.removeFirst(n)
            return taken
        }
    }

    func takeAll() -> [(queue: String, message: AMQPMessage)] {
        state.withLockedValue { s in
            defer { s.items.removeAll() }
            return s.items
        }
    }
}
