/// A bind or a column value, whichever database: the store only uses text and integers.
enum SQLValue: Sendable, Equatable {
    case text(String)
    case integer(Int64)
    case null

    var string: String? {
        if case .text(let s) = self { return s }
        return nil
    }

    var integer: Int64? {
        if case .integer(let n) = self { return n }
        return nil
    }
}

/// One result row, by column name.
typealias SQLRow = [String: SQLValue]
