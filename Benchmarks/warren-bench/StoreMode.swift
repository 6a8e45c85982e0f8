/// The conversation store of a bench run: off, or a fresh SQLite file or PostgreSQL database
/// (the private cluster of `scripts/postgres.sh`), with a store queue of its own.
enum StoreMode: String, Sendable, CaseIterable {
    case off, sqlite, postgres

    /// Warren's environment for a run with this store; `database` names the file or database.
    func environment(database: String, queue: String) -> [String: String] {
        switch self {
        case .off: return ["WARREN_STORE_ENABLED": "false"]
        case .sqlite:
            return ["WARREN_STORE_ENABLED": "true", "WARREN_STORE_URL": "sqlite://\(database)", "WARREN_STORE_QUEUE": queue]
        case .postgres:
            return ["WARREN_STORE_ENABLED": "true", "WARREN_STORE_URL": StoreSetup.postgresURL(database), "WARREN_STORE_QUEUE": queue]
        }
    }
}
