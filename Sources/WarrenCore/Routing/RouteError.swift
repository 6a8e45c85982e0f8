/// Why a route or pattern was refused (the `bad_route` error's message).
public enum RouteError: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    case tooLong(bytes: Int)
    case tooManyWords(Int)
    case badWord(String)
    case wildcardInRoute

    public var description: String {
        switch self {
        case .empty: return "route is empty"
        case .tooLong(let n): return "route is \(n) bytes (max \(RouteKey.maxBytes))"
        case .tooManyWords(let n): return "route has \(n) words (max \(RouteKey.maxWords))"
        case .badWord(let w): return "invalid word '\(w.prefix(64))': words are 1-64 bytes of [A-Za-z0-9_-]"
        case .wildcardInRoute: return "a route cannot contain * or # (those belong in subscription patterns)"
        }
    }
}
