/// The error codes of docs/protocol.md, shared by the WebSocket and polling frontends.
public enum ErrorCode: String, Sendable, Hashable, CaseIterable {
    case badFrame = "bad_frame"
    case badRoute = "bad_route"
    case forbidden
    case tooLarge = "too_large"
    case unauthorized
    case rateLimited = "rate_limited"
    case unavailable
    case notFound = "not_found"
    case conflict
    case `internal`

    /// The HTTP status the polling frontend answers with (docs/protocol.md).
    public var httpStatus: Int {
        switch self {
        case .badFrame, .badRoute: return 400
        case .unauthorized: return 401
        case .forbidden: return 403
        case .notFound: return 404
        case .conflict: return 409
        case .tooLarge: return 413
        case .rateLimited: return 429
        case .unavailable: return 503
        case .internal: return 500
        }
    }
}
