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
