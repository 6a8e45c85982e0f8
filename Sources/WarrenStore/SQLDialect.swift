/// The two SQL dialects the store speaks; the statements are the same but for these.
enum SQLDialect: Sendable {
    case sqlite
    case postgres

    /// The n-th (1-based) bind placeholder.
    func p(_ n: Int) -> String {
        switch self {
        case .sqlite: return "?\(n)"
        case .postgres: return "$\(n)"
        }
    }

    /// The larger of two text values.
    var greatest: String {
        switch self {
        case .sqlite: return "max"
        case .postgres: return "GREATEST"
        }
    }
}
