import AMQPClient
import Logging
import NIOConcurrencyHelpers

/// Puts the conversation exchange back when it was deleted on the broker (by hand, say from
/// the management UI), with this node's bindings on it.
///
/// Deleting an exchange deletes every binding on it, and RabbitMQ tells the queues' consumers
/// nothing: publishes would fail (`unavailable`) until Warren restarted, and the live queue,
/// the store's queue and every inbox would stay unbound. So every ``interval`` the node checks
/// the exchange (a passive declare on a channel of its own, opened for the check); when the
/// broker answers 404 it declares the exchange again and binds again what it knows: its live
/// queue's keys, `store.patterns` on the store's queue, and the patterns of every inbox open on
/// it. Every node does this for itself; the inboxes of users connected to no node stay unbound
/// until they subscribe again (no node knows their patterns; the store has what they missed).
public final class ExchangeWatch: Sendable {
    public let exchange: String
    public let interval: Duration
    private let open: @Sendable () async throws -> any BrokerChannel
    private let logger: Logger
    private let task = NIOLockedValueBox<Task<Void, Never>?>(nil)
    /// What ``start(restore:)`` was given. In a struct, as ``Presence``'s handlers are: a closure
    /// kept straight in a generic box gains a conversion wrapper at every `withLockedValue`.
    private struct Restore {
        let run: @Sendable () async -> String
    }
    private let restore = NIOLockedValueBox<Restore?>(nil)
    /// One check at a time.
    private let checking = NIOLockedValueBox(false)

    /// `open` opens a channel on the node's first broker connection (closed after each check).
    public init(exchange: String, interval: Duration = .seconds(5), open: @escaping @Sendable () async throws -> any BrokerChannel,
                logger: Logger) {
        self.exchange = exchange
        self.interval = interval
        self.open = open
        self.logger = logger
    }

    /// Checks every ``interval`` until ``stop()``; `restore` binds again what the node knows and
    /// describes what it did.
    public func start(restore: @escaping @Sendable () async -> String) {
        self.restore.withLockedValue { $0 = Restore(run: restore) }
        let task = Task { [self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if Task.isCancelled { return }
                _ = await check(restore: restore)
            }
        }
        self.task.withLockedValue { $0 = task }
    }

    public func stop() {
        task.withLockedValue { $0?.cancel() }
        restore.withLockedValue { $0 = nil }
    }

    /// Checks now, not at the next tick, when `error` says the broker found no exchange (a
    /// publish to it closed the publishing channel with 404); does nothing before ``start(restore:)``
    /// or after ``stop()``.
    public func channelClosed(_ error: AMQPError?) {
        guard case .channelClosed(let close) = error, close.replyCode == 404,
              let restore = restore.withLockedValue({ $0 })?.run else { return }
        Task { await check(restore: restore) }
    }

    /// Checks the exchange once; true when it was missing and has been declared again (and
    /// `restore` run). A check that cannot tell (the link is down) does nothing: the next one asks again.
    @discardableResult
    public func check(restore: @Sendable () async -> String) async -> Bool {
        guard checking.withLockedValue({ c in defer { c = true }; return !c }) else { return false }
        defer { checking.withLockedValue { $0 = false } }
        guard await isMissing() else { return false }
        logger.error("the exchange is gone from the broker (deleted?); declaring it again", metadata: ["exchange": "\(exchange)"])
        do {
            let channel = try await open()
            try await channel.exchangeDeclare(exchange, type: "topic", durable: true, autoDelete: false, internal: false,
                                              passive: false, arguments: [:])
            try? await channel.close()
        } catch {
            logger.error("could not declare the exchange again; retrying at the next check",
                         metadata: ["exchange": "\(exchange)", "error": "\(error)"])
            return false
        }
        let restored = await restore()
        logger.warning("the exchange was declared again and this node's bindings restored",
                       metadata: ["exchange": "\(exchange)", "bound": "\(restored)"])
        return true
    }

    /// Binds `queue` to `exchange` again with each of `keys` (on the channel `channel` gives for
    /// each, so a closed one can be replaced in between); a failure is logged and the rest go on.
    /// Returns how many bindings were made.
    static func bindAgain(_ keys: [String], queue: String, exchange: String, recorded: Bool,
                          on channel: () async throws -> any BrokerChannel, logger: Logger) async -> Int {
        var made = 0
        for key in keys {
            do {
                try await channel().bind(queue: queue, exchange: exchange, pattern: key, recorded: recorded)
                made += 1
            } catch {
                logger.warning("could not bind a queue again", metadata: ["queue": "\(queue)", "key": "\(key)", "error": "\(error)"])
            }
        }
        return made
    }

    /// Whether the broker answers a passive declare of the exchange with 404.
    private func isMissing() async -> Bool {
        guard let channel = try? await open() else { return false }
        do {
            try await channel.exchangeDeclare(exchange, type: "topic", durable: true, autoDelete: false, internal: false,
                                              passive: true, arguments: [:])
        } catch AMQPError.channelClosed(let close) where close.replyCode == 404 {
            return true
        } catch {
            try? await channel.close()
            return false
        }
        try? await channel.close()
        return false
    }
}
