/// What ``SQLConversationStore`` needs of a database: a dialect, serialised transactions for
/// writes, and sessions for reads. SQLite and PostgreSQL each provide one.
protocol SQLDatabase: Sendable {
    var dialect: SQLDialect { get }
    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws -> T
    /// Runs `body` outside any write transaction.
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) async throws -> T) async throws -> T
    func close() async
}
