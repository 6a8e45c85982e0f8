import AMQPClient
import NIOCore

/// Publishes written to the broker, awaiting their confirms.
public struct PendingPublish: Sendable {
    enum State: Sendable {
        /// A repeat of a remembered `(from, cid)`: the first ids.
        case done([String])
        /// A repeat of a send still awaiting confirms: wait for its outcome.
        case joining(String, PublishRequest, String, Via, Int)
        case confirming([String], [EventLoopFuture<Void>], String?, String?, String, Int64)
    }

    let publisher: Publisher
    let state: State
    /// Route and envelope size of each publish, for metrics once confirmed.
    let sent: [(route: String, bytes: Int)]
    let via: Via
    let started: ContinuousClock.Instant

    /// The ids, once every route is confirmed; `unavailable` if the broker nacked, dropped or timed out.
    public func wait() async throws(ProtocolError) -> [String] {
        switch state {
        case .done(let ids):
            return ids
        case .joining(let key, let request, let from, let via, let max):
            if let ids = await publisher.join(key) { return ids }
            return try await publisher.publish(request, from: from, via: via, maxMessageBytes: max)
        case .confirming(let ids, let confirms, let key, let cid, let from, let now):
            var failure: Error?
            for confirm in confirms {
                do { try await confirm.get() } catch { failure = failure ?? error }
            }
            return try finish(failure, ids, key, cid, from, now)
        }
    }

    /// Calls `body` with what ``wait()`` would return, without a task when the publish awaits
    /// its confirms (the common case): from the confirming connection's event loop.
    public func whenDone(_ body: @escaping @Sendable (Result<[String], ProtocolError>) -> Void) {
        switch state {
        case .done(let ids):
            body(.success(ids))
        case .joining:
            Task {
                do throws(ProtocolError) { body(.success(try await wait())) } catch { body(.failure(error)) }
            }
        case .confirming(let ids, let confirms, let key, let cid, let from, let now):
            guard let first = confirms.first else { return body(Result { () throws(ProtocolError) in try finish(nil, ids, key, cid, from, now) }) }
            EventLoopFuture.whenAllComplete(confirms, on: first.eventLoop).whenSuccess { results in
                let failure = results.lazy.compactMap { result -> Error? in
                    if case .failure(let error) = result { error } else { nil }
                }.first
                body(Result { () throws(ProtocolError) in try finish(failure, ids, key, cid, from, now) })
            }
        }
    }

    /// Calls `body` once the broker has answered every route (confirmed, nacked or timed out),
    /// counting nothing: for Warren's own envelopes, which are no client's publishes.
    func whenSettled(_ body: @escaping @Sendable () -> Void) {
        guard case .confirming(_, let confirms, _, _, _, _) = state, let first = confirms.first else { return body() }
        EventLoopFuture.whenAllComplete(confirms, on: first.eventLoop).whenComplete { _ in body() }
    }

    /// Counts a confirmed publish and remembers its ids, or reports the failure.
    private func finish(_ failure: Error?, _ ids: [String], _ key: String?, _ cid: String?, _ from: String,
                        _ now: Int64) throws(ProtocolError) -> [String] {
        if let failure {
            if case AMQPError.publishNacked? = failure as? AMQPError { publisher.nacked() }
            if let cid { publisher.rememberAttempt(from: from, cid: cid, routes: sent.map(\.route), ids: ids, now: now) }
            if let key { publisher.finishInFlight(key, with: nil) }
            throw ProtocolError(.unavailable, "the broker did not confirm the publish: \(failure)", ref: cid)
        }
        let elapsed = ContinuousClock.now - started
        for (route, bytes) in sent {
            publisher.metrics.message(route, .amqp, .out, bytes: bytes)
            publisher.metrics.message(route, Frontend(clientDoor: via), .in, bytes: bytes)
            publisher.metrics.confirmed(route, after: elapsed)
        }
        if let cid { publisher.remember(from: from, cid: cid, ids: ids, now: now) }
        if let key { publisher.finishInFlight(key, with: ids) }
        return ids
    }
}
