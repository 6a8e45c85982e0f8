import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// History, conversation lists and read markers (docs/protocol.md) for every door, with their
/// authorization: the same checks whether a WebSocket op or an HTTP request asks.
///
/// As a service it watches the store: a ping every 2 s (`/readyz` is 503 while the database
/// does not answer), the lag of `warren.store` every 5 s, and pruning past `store.max_age`
/// every hour.
public final class Conversations: Service, Sendable {
    public let store: any ConversationStore
    public let settings: StoreSettings
    public let metrics: StoreMetrics
    /// Recovery on resubscribe (``recover(pattern:since:rules:)``).
    public let recovery: RecoverySettings
    /// What a recovery waits for before it reads (``StoreFence``).
    public let fence: StoreFence
    /// Recoveries asking the same at once share one read.
    let flights = RecoveryFlights()
    let logger: Logger
    private let writer = NIOLockedValueBox<StoreWriter?>(nil)

    public init(store: any ConversationStore, settings: StoreSettings, recovery: RecoverySettings = RecoverySettings(),
                metrics: StoreMetrics, logger: Logger) {
        self.store = store
        self.settings = settings
        self.recovery = recovery
        self.metrics = metrics
        self.logger = logger
        self.fence = StoreFence(store: store, wait: .seconds(recovery.waitSeconds), logger: logger)
        metrics.up(true)
    }

    /// Whether the database answered the last time it was asked.
    public var isHealthy: Bool { metrics.isUp }

    /// The node's writer (set when the broker link is up).
    func attach(_ writer: StoreWriter) { self.writer.withLockedValue { $0 = writer } }

    /// Binds the store's queue again (``StoreWriter/restoreBindings()``); 0 without a writer.
    func restoreBindings() async -> Int { await writer.withLockedValue({ $0 })?.restoreBindings() ?? 0 }

    public func run() async throws {
        var tick = 0
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                try await withDeadline(.seconds(2)) { [store] in try await store.ping() }
                if !metrics.isUp { logger.info("the conversation store answers again") }
                metrics.up(true)
            } catch {
                if metrics.isUp { logger.error("the conversation store does not answer", metadata: ["error": "\(error)"]) }
                metrics.up(false)
            }
            if tick % 3 == 0 { await writer.withLockedValue({ $0 })?.measureLag() }
            if tick % 1800 == 0, metrics.isUp {
                let cutoff = WallClock.milliseconds() - Int64(settings.maxAgeSeconds) * 1000
                if let n = try? await store.prune(before: cutoff), n > 0 {
                    logger.info("pruned old messages from the conversation store", metadata: ["messages": "\(n)"])
                }
            }
            tick += 1
            do { try await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(2)) } } catch { break }
        }
        await writer.withLockedValue({ $0 })?.stop()
        await store.close()
    }

    // MARK: operations

    /// A page of `route`'s history: allowed when the user may subscribe to the route itself.
    public func history(route text: String, before: String?, limit: Int?, rules: AccessRules) async throws(ProtocolError) -> HistoryPage {
        let route = try readableRoute(text, rules: rules)
        var beforeID: String?
        if let before {
            guard let id = UUIDv7Generator.canonical(before) else { throw ProtocolError(.badFrame, "before must be a message id", ref: nil) }
            beforeID = id
        }
        let limit = limit ?? StoreSettings.defaultPage
        guard limit >= 1 else { throw ProtocolError(.badFrame, "limit must be at least 1", ref: nil) }
        let found = try await ask { [store, settings, beforeID] in
            try await store.history(route: route.value, before: beforeID, limit: min(limit, settings.maxPage))
        }
        guard let page = found else {
            throw ProtocolError(.notFound, "before names no message of \(route.value)", ref: nil)
        }
        return HistoryPage(messages: page.messages.filter(isWellFormed), more: page.more)
    }

    /// The user's conversations they may read, newest activity first.
    public func list(user: String, rules: AccessRules, limit: Int = 200) async throws(ProtocolError) -> [ConversationSummary] {
        try await ask { [store, settings] in
            try await store.conversations(user: user, uncountedTypes: settings.uncountedTypes, limit: limit)
        }.filter { summary in
            isWellFormed(summary.last) && (try? TopicPattern(summary.route)).map(rules.canSubscribe) ?? false
        }
    }

    /// Moves the user's read marker forward; returns it as it stands and whether it moved.
    public func markRead(user: String, route text: String, id: String, rules: AccessRules) async throws(ProtocolError)
        -> (route: RouteKey, marker: String, moved: Bool) {
        let route = try readableRoute(text, rules: rules)
        guard let id = UUIDv7Generator.canonical(id) else { throw ProtocolError(.badFrame, "id must be a message id", ref: nil) }
        let found = try await ask { [store] in try await store.markRead(user: user, route: route.value, id: id) }
        guard let marker = found else { throw ProtocolError(.notFound, "no message of \(route.value) has the id \(id)", ref: nil) }
        return (route, marker, marker == id)
    }

    /// A route (never a pattern: `*` and `#` are not route words) the user may subscribe to.
    private func readableRoute(_ text: String, rules: AccessRules) throws(ProtocolError) -> RouteKey {
        let route: RouteKey
        do { route = try RouteKey(text) } catch { throw ProtocolError(.badRoute, error.description, ref: nil) }
        guard let pattern = try? TopicPattern(route.value), rules.canSubscribe(pattern) else {
            throw ProtocolError(.forbidden, "not allowed to read \(route.value)", ref: nil)
        }
        return route
    }

    /// A row from the database is copied into answers as it is: only if it is a JSON object
    /// (a row edited by hand, or damaged, is left out and logged, never sent half-formed).
    func isWellFormed(_ message: StoredMessage) -> Bool {
        if case .object? = try? JSONParser.parse(message.envelope.utf8) { return true }
        logger.warning("a stored message is not a JSON object; left out", metadata: ["id": "\(message.id)"])
        return false
    }

    /// Runs a client's request on the store: `unavailable` at once while the store is known not
    /// to answer, or when it does not answer within 5 s (never a request held until it is back).
    func ask<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws(ProtocolError) -> T {
        guard metrics.isUp else { throw ProtocolError(.unavailable, "the conversation store does not answer", ref: nil) }
        do {
            return try await withDeadline(.seconds(5), operation)
        } catch {
            logger.warning("conversation store request failed", metadata: ["error": "\(error)"])
            throw ProtocolError(.unavailable, "the conversation store is unavailable", ref: nil)
        }
    }
}
