import AMQPClient
import Logging

/// Retries a set-up on the broker (opening a channel, declaring, binding and consuming a queue
/// again) with back-off — 50 ms, doubling up to 5 s — until it succeeds.
enum BrokerRetry {
    /// `body`'s result once it succeeded; nil when it failed with an error `stop` accepts (by
    /// default: Warren closed its broker connection itself, it is shutting down).
    static func untilDone<T: Sendable>(_ what: String, logger: Logger,
                                       stop: @Sendable (any Error) -> Bool = { ($0 as? AMQPError) == .closedByUser },
                                       _ body: @Sendable () async throws -> T) async -> T? {
        var delay = Duration.milliseconds(50)
        while true {
            do {
                return try await body()
            } catch {
                if stop(error) {
                    logger.error("\(what): giving up", metadata: ["error": "\(error)"])
                    return nil
                }
                logger.warning("\(what) failed; retrying", metadata: ["error": "\(error)", "in": "\(delay)"])
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }
}

extension BrokerRetry {
    /// A consumer of one of the node's own queues ended with `error` (nil: Warren cancelled it).
    /// Cancelled by the broker — its queue was deleted — `setUp` (declaring, binding and
    /// consuming the queue again) runs on a task until it succeeds, then `afterwards`. With
    /// `replacing`, a channel the broker closed with a channel error — the consumer's own, or the
    /// current one during an attempt (a bind to an exchange deleted meanwhile answers 404 and
    /// closes it) — is replaced before the next attempt, and the retries are given up only when
    /// Warren closes its connection; without it, once `channel` is closed. Any other end is
    /// logged as an error.
    static func setUpAgain(after error: AMQPError?, _ consumer: String, channel: any BrokerChannel,
                           replacing: ReplaceableChannel? = nil, logger: Logger,
                           _ setUp: @escaping @Sendable () async throws -> Void,
                           afterwards: @escaping @Sendable () -> Void = {}) {
        guard let error else { return }
        switch error {
        case .consumerCancelled:
            logger.warning("the broker cancelled \(consumer) (its queue deleted?); setting it up again")
        case .channelClosed where replacing != nil:
            logger.warning("the broker closed the channel of \(consumer); opening another and setting it up again",
                           metadata: ["error": "\(error)"])
        default:
            logger.error("\(consumer) ended", metadata: ["error": "\(error)"])
            return
        }
        let stop: @Sendable (any Error) -> Bool
        if replacing == nil {
            stop = { _ in channel.closeReason != nil }
        } else {
            stop = { ($0 as? AMQPError) == .closedByUser }
        }
        let channelClosed: Bool
        if case .channelClosed = error { channelClosed = true } else { channelClosed = false }
        Task {
            let done = await untilDone("setting \(consumer) up again", logger: logger, stop: stop) {
                if let replacing {
                    if channelClosed { try await replacing.replace(channel, knownClosed: true) }
                    try await replacing.replace(replacing.channel)
                }
                try await setUp()
                return true
            }
            guard done == true else { return }
            logger.info("\(consumer) set up again")
            afterwards()
        }
    }
}
