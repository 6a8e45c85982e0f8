import Logging
import WarrenCore

/// Opens the backend `store.url` names and creates or migrates its schema.
public enum StoreBackends {
    public static func open(_ settings: StoreSettings, logger: Logger) async throws -> any ConversationStore {
        guard let backend = StoreSettings.Backend(url: settings.url) else {
            throw StoreDataError(description: "store.url must be sqlite://<path> or postgres://…")
        }
        let store: SQLConversationStore
        switch backend {
        case .sqlite(let path):
            store = SQLConversationStore(database: try await SQLiteDatabase.open(path: path, logger: logger))
        case .postgres(let url):
            store = SQLConversationStore(database: try await PostgresDatabase.open(url: url, logger: logger))
        }
        do {
            try await store.migrate()
        } catch {
            await store.close()
            throw error
        }
        return store
    }
}
