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

    /// The smaller of two values.
    var least: String {
        switch self {
        case .sqlite: return "min"
        case .postgres: return "LEAST"
        }
    }

    /// Ids and sort keys: compared byte by byte (PostgreSQL's default collation may skip the hyphens).
    var keyType: String {
        switch self {
        case .sqlite: return "TEXT"
        case .postgres: return "TEXT COLLATE \"C\""
        }
    }

    /// An integer expression as 12 lower-case hex digits (``SortKey/prefix(_:)`` in SQL).
    func hex12(_ expression: String) -> String {
        switch self {
        case .sqlite: return "printf('%012x', \(expression))"
        case .postgres: return "lpad(to_hex(\(expression)), 12, '0')"
        }
    }
}
