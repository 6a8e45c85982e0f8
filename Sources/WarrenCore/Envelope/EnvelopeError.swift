/// Why a client's message was refused (maps onto the error codes of docs/protocol.md).
public enum EnvelopeError: Error, Sendable, Equatable, CustomStringConvertible {
    case badRoute(RouteError)
    case badField(String)
    case tooLarge(bytes: Int, max: Int)

    public var code: String {
        switch self {
        case .badRoute: return "bad_route"
        case .badField: return "bad_frame"
        case .tooLarge: return "too_large"
        }
    }

    public var description: String {
        switch self {
        case .badRoute(let e): return e.description
        case .badField(let s): return s
        case .tooLarge(let n, let max): return "envelope of \(n) bytes exceeds \(max)"
        }
    }
}
