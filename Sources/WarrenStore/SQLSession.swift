/// Runs statements on one connection (inside a transaction, or for reads).
protocol SQLSession: Sendable {
    func query(_ sql: String, _ binds: [SQLValue]) async throws -> [SQLRow]
}

extension SQLSession {
    func query(_ sql: String) async throws -> [SQLRow] { try await query(sql, []) }
}
