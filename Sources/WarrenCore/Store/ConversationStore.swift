/// Where conversations are kept (docs/protocol.md): the seam between the bridge and its database.
/// Two backends implement it (SQLite, PostgreSQL, in the `WarrenStore` target); the bridge logic
/// above it — the writer, the operations and their authorization — knows neither.
public protocol ConversationStore: Sendable {
    /// Creates or migrates the schema.
    func migrate() async throws
    /// Writes messages, and records `fences` (``StoreFence``), in one transaction. A message
    /// whose id is already kept adds nothing (a redelivery), so writing the same batch twice
    /// keeps each message once; so does a fence.
    func write(_ messages: [StoredMessage], fences: [String]) async throws
    /// The `limit` newest messages of `route` older than the message `before` names (all when
    /// nil), oldest first, in ``SortKey`` order; nil when `before` is neither a message of the
    /// route nor a UUIDv7 that places itself.
    func history(route: String, before: String?, limit: Int) async throws -> HistoryPage?
    /// Where the message kept under `id` stands (its ``SortKey``), whatever its route, and
    /// that route; nil when no message is kept under `id`.
    func position(of id: String) async throws -> (sortKey: String, route: String)?
    /// Kept messages placed after the key `after` and before the key `below` (nil: no bound),
    /// of the routes `routes` takes, newest first, at most `limit`.
    func messages(after: String, below: String?, routes: RouteFilter, limit: Int) async throws -> [StoredMessage]
    /// Whether the fence `id` has been written (by any node's writer).
    func fenceWritten(_ id: String) async throws -> Bool
    /// The user's conversations, newest activity first (at most `limit`).
    func conversations(user: String, uncountedTypes: [String], limit: Int) async throws -> [ConversationSummary]
    /// Moves the user's read marker on `route` to `id` if that stands later (``SortKey``) than
    /// where it is; returns the marker after the call, or nil when `id` is neither a message of
    /// the route nor a UUIDv7 that places itself.
    func markRead(user: String, route: String, id: String) async throws -> String?
    /// Deletes messages placed before `cutoff` (Unix ms; ``SortKey``), and fences recorded
    /// more than ``StoreFence/kept`` ago; returns how many messages.
    func prune(before cutoff: Int64) async throws -> Int
    /// The patterns each store queue was last recorded as bound with (by any node writing this
    /// store), so that a pattern since dropped from `store.patterns`, or a queue since renamed
    /// in `store.queue`, can be unbound: AMQP cannot list a queue's bindings.
    func boundPatterns() async throws -> [String: [String]]
    /// Records `patterns` as the bindings of `queue`, replacing what was recorded (none: the
    /// queue is forgotten).
    func recordBoundPatterns(queue: String, _ patterns: [String]) async throws
    /// A cheap round trip: throws while the database is unreachable.
    func ping() async throws
    func close() async
}

extension ConversationStore {
    /// Writes messages in one transaction, with no fence.
    public func write(_ messages: [StoredMessage]) async throws { try await write(messages, fences: []) }
}
