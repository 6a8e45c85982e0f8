import Foundation

extension WarrenClient {
    // MARK: subscriptions

    /// Subscribes `pattern`; returns once the subscription is in effect (or throws Warren's
    /// error: `forbidden`, `bad_route`, …). `presence` announces the user on a concrete live route;
    /// `since` (an envelope id, live only) delivers what came after it first.
    public func subscribe(_ pattern: String, mode: SubscriptionMode = .live, presence: Bool = false,
                          id: String? = nil, since: String? = nil) async throws -> Subscription {
        guard !closed else { throw closedError }
        counter += 1
        let id = id ?? "s\(counter)"
        guard subscriptions[id] == nil else { throw WarrenError("conflict", "subscription id \(id) is in use") }
        let (stream, continuation) = AsyncStream.makeStream(of: Delivery.self,
                                                            bufferingPolicy: mode == .live ? .bufferingNewest(10_000) : .unbounded)
        subscriptions[id] = Entry(pattern: pattern, mode: mode, presence: presence, continuation: continuation, lastID: since)
        if let socket { socket.send(Wire.encode(subFrame(id))) } else if pollOpen { restartPolling() }
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
            if subscriptions[id] != nil { subscriptions[id]!.waiters.append(c) } else { c.resume(throwing: closedError) }
        }
        return Subscription(id: id, pattern: pattern, mode: mode, stream: stream, client: self)
    }

    func unsubscribe(_ id: String) {
        guard let entry = subscriptions.removeValue(forKey: id) else { return }
        entry.continuation.finish()
        for w in entry.waiters { w.resume(throwing: WarrenError.closed) }
        if let socket { socket.send(Wire.encode(Wire.Unsub(id: id))) } else if pollOpen { restartPolling() }
    }

    func subFrame(_ id: String) -> Wire.Sub {
        let e = subscriptions[id]!
        return Wire.Sub(id: id, pattern: e.pattern, mode: e.mode.rawValue, presence: e.presence ? true : nil, since: e.since)
    }

    /// Subscription `id` asked for again on the socket of connection `epoch`, if both still are.
    func resendSubscription(_ id: String, epoch asked: Int) {
        guard asked == epoch, subscriptions[id] != nil, let socket else { return }
        socket.send(Wire.encode(subFrame(id)))
    }

    /// A subscription in effect: where it starts (`at`: what it resubscribes `since` while it
    /// has had no message), and how its `since` went, told on ``recoveries``.
    func started(_ id: String, at: String?, recovered: Bool?, reason: String?) {
        guard var entry = subscriptions[id] else { return }
        if entry.mode == .live, entry.lastID == nil, let at {
            entry.lastID = at
            subscriptions[id] = entry
        }
        guard let recovered else { return }
        recoveryContinuation.yield(recovered ? .recovered(subscription: id, pattern: entry.pattern)
            : .reload(subscription: id, pattern: entry.pattern, reason: reason ?? "unknown"))
    }

    /// The answer to subscription `id`: in effect, or refused (then it ends).
    func settle(_ id: String, _ error: WarrenError?) {
        guard var entry = subscriptions[id] else { return }
        let waiters = entry.waiters
        entry.waiters = []
        if let error {
            subscriptions[id] = nil
            entry.continuation.finish()
            for w in waiters { w.resume(throwing: error) }
        } else {
            entry.ready = true
            subscriptions[id] = entry
            for w in waiters { w.resume() }
        }
    }

    /// Whether a buffered delivery is still to be handed out: not an inbox delivery handed out
    /// (and so acknowledged) before, nor one from a connection since lost (RabbitMQ requeued it
    /// then, and it comes again on the new one).
    func handOut(_ delivery: Delivery) -> Bool {
        guard let entry = subscriptions[delivery.subscription], entry.mode == .inbox else { return true }
        let id = delivery.envelope.id
        let stale = entry.seen.contains(id) || delivery.epoch != epoch
        guard stale else { return true }
        if delivery.epoch == epoch, let socket { socket.send(Wire.encode(Wire.Ack(ids: [id]))) }
        if pollAwaiting.remove(id) != nil, pollAwaiting.isEmpty { resumePollAcked() }
        return false
    }

    /// The iteration moved past an inbox delivery: acknowledged.
    func acknowledge(_ delivery: Delivery) {
        let id = delivery.envelope.id
        subscriptions[delivery.subscription]?.seen.insert(id)
        if delivery.epoch == epoch, let socket { socket.send(Wire.encode(Wire.Ack(ids: [id]))) }
        if pollAwaiting.remove(id) != nil, pollAwaiting.isEmpty { resumePollAcked() }
    }

    func deliver(_ subscription: String, _ env: Envelope, redelivered: Bool, epoch: Int, onlyLive: Bool = false,
                         fromSocket: Bool = false) {
        // A poll answer names a subscription by its id (else its pattern).
        let key = subscriptions[subscription] != nil ? subscription : subscriptions.first { $0.value.pattern == subscription }?.key
        guard let key, var entry = subscriptions[key], !onlyLive || entry.mode == .live else { return }
        if fromSocket, entry.mode == .live, heldLive != nil {
            heldLive!.append((key, env, epoch))
            return
        }
        if entry.seen.contains(env.id) {
            // Handed on before: an inbox redelivery is acknowledged, not shown twice.
            if entry.mode == .inbox, epoch == self.epoch, let socket { socket.send(Wire.encode(Wire.Ack(ids: [env.id]))) }
            return
        }
        if entry.mode == .live {
            entry.seen.insert(env.id)
            entry.lastID = env.id
            subscriptions[key] = entry
        } else if pollOpen, socket == nil {
            pollAwaiting.insert(env.id)
        }
        entry.continuation.yield(Delivery(envelope: env, redelivered: redelivered, subscription: key, epoch: epoch))
    }
}
