enum StoreBackend: String, CaseIterable, Sendable {
    case sqlite, postgres
}
