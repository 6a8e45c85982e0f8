import AMQPClient
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// Publishes client messages to the exchange with publisher confirms.
///
/// One confirm-mode channel carries every publish; confirms are pipelined, so
/// many sends are in flight at once. A send is answered only after the broker
/// confirmed every route of it; the `(from, cid)` cache makes a retried send
/// return the first ids instead of publishing twice.
public final class Publisher: Sendable {
    let channel: AMQPChannel
    let exchange: String
    let confirmTimeout: Duration
    let ids = UUIDv7Generator()
    private let dedup: NIOLockedValueBox<DedupCache>
    /// Sends with a cid whose confirms are still pending: a retry waits for the first.
    private let inFlight = NIOLockedValueBox<[String: [CheckedContinuation<[String]?, Never>]]>([:])

    init(channel: AMQPChannel, exchange: String, confirmTimeout: Duration = .seconds(10)) {
        self.channel = channel
        self.exchange = exchange
        self.confirmTimeout = confirmTimeout
        self.dedup = NIOLockedValueBox(DedupCache())
    }

    /// Publishes one envelope per route, stamped with `from` and `via`; returns the ids.
    public func publish(_ request: PublishRequest, from: String, via: Via, maxMessageBytes: Int,
                        nowMilliseconds: Int64 = Clock.milliseconds()) async throws(ProtocolError) -> [String] {
        var dedupKey: String?
        if let cid = request.cid {
            if let ids = dedup.withLockedValue({ $0.lookup(from: from, cid: cid, nowMilliseconds: nowMilliseconds) }) { return ids }
            let key = DedupCache.key(from: from, cid: cid)
            let waiting: Bool = inFlight.withLockedValue { s in
                if s[key] != nil { return true }
                s[key] = []
                return false
            }
            if waiting {
                let ids = await withCheckedContinuation { c in
                    let stillRunning = inFlight.withLockedValue { s -> Bool in
                        guard s[key] != nil else { return false }
                        s[key]!.append(c)
                        return true
                    }
                    if !stillRunning { c.resume(returning: nil) }
                }
                if let ids { return ids }
                if let ids = dedup.withLockedValue({ $0.lookup(from: from, cid: cid, nowMilliseconds: nowMilliseconds) }) { return ids }
                return try await publish(request, from: from, via: via, maxMessageBytes: maxMessageBytes, nowMilliseconds: nowMilliseconds)
            }
            dedupKey = key
        }
        var result: [String]?
        defer {
            if let key = dedupKey {
                let waiters = inFlight.withLockedValue { $0.removeValue(forKey: key) } ?? []
                waiters.forEach { $0.resume(returning: result) }
            }
        }

        var envelopes: [(Envelope, [UInt8])] = []
        for route in request.routes {
            let envelope = Envelope(id: ids.next(nowMilliseconds: UInt64(nowMilliseconds)), route: route.value, type: request.type,
                                    from: from, via: via, ts: nowMilliseconds, body: request.body, cid: request.cid,
                                    transient: request.transient, headers: request.headers)
            let bytes = envelope.encoded()
            guard bytes.count <= maxMessageBytes else {
                throw ProtocolError(.tooLarge, "envelope of \(bytes.count) bytes exceeds \(maxMessageBytes)", ref: request.cid)
            }
            envelopes.append((envelope, bytes))
        }
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (envelope, bytes) in envelopes {
                    group.addTask { [channel, exchange] in
                        try await channel.publish(ByteBuffer(bytes: bytes), exchange: exchange, routingKey: envelope.route,
                                                  properties: EnvelopeAMQPMapping.properties(for: envelope))
                    }
                }
                group.addTask { [confirmTimeout] in
                    try await Task.sleep(for: confirmTimeout)
                    throw AMQPError.timedOut("publisher confirm")
                }
                for _ in envelopes { try await group.next() }
                group.cancelAll()
            }
        } catch {
            throw ProtocolError(.unavailable, "the broker did not confirm the publish: \(error)", ref: request.cid)
        }
        let published = envelopes.map(\.0.id)
        if let cid = request.cid {
            dedup.withLockedValue { $0.remember(from: from, cid: cid, ids: published, nowMilliseconds: nowMilliseconds) }
        }
        result = published
        return published
    }
}

/// Warren's clock: Unix epoch milliseconds.
public enum Clock {
    public static func milliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
