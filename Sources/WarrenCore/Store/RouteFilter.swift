/// Which routes a store read takes, as far as SQL can tell them apart: one route, the routes
/// under a literal first part, or every route. A pattern's filter takes every route the
/// pattern matches and perhaps others (`room.#` reads `room` and every `room.…`, and `roomy.x`
/// is not read but `*.alice` reads every route): the caller matches each row against the
/// pattern itself.
public enum RouteFilter: Sendable, Equatable {
    /// Exactly this route.
    case route(String)
    /// This route and every route beginning with it and a dot.
    case under(String)
    case any

    /// The narrowest filter that takes every route `pattern` matches.
    public init(_ pattern: TopicPattern) {
        var literal: [Substring] = []
        for word in pattern.words {
            guard case .literal(let text) = word else { break }
            literal.append(text)
        }
        if literal.count == pattern.words.count {
            self = .route(pattern.value)
        } else if literal.isEmpty {
            self = .any
        } else {
            self = .under(literal.joined(separator: "."))
        }
    }
}
