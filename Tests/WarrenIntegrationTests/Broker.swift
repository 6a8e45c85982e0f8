import AMQPClient
import Foundation
import TestSupport

/// rabbitmqctl through the project's script.
enum Broker {
    @discardableResult
    static func ctl(_ args: String...) throws -> String { try TestEnvironment.rabbitmqctl(args) }

    /// Runs `body` with the broker's `consumer_timeout` at `milliseconds`, checked every 200 ms,
    /// for the channels opened meanwhile (a channel reads both when it opens and re-arms its
    /// timer); RabbitMQ's defaults (30 minutes, checked every minute) are put back afterwards,
    /// whatever happens. The suite runs serially: no other test's channel sees it.
    static func withConsumerTimeout<T>(milliseconds: Int, _ body: () async throws -> T) async throws -> T {
        func set(_ timeout: Int, tick: Int) throws {
            try ctl("eval", "application:set_env(rabbit, consumer_timeout, \(timeout)), application:set_env(rabbit, channel_tick_interval, \(tick)).")
        }
        try set(milliseconds, tick: 200)
        do {
            let result = try await body()
            try set(1_800_000, tick: 60_000)
            return result
        } catch {
            try? set(1_800_000, tick: 60_000)
            throw error
        }
    }
}
