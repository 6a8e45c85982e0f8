/// Which pages of other origins may read Warren's answers (`http.cors_origin`): none (the
/// default), every one (`*`), or those listed. The router's endpoints get it through
/// hummingbird's middleware (preflights included); the answers the connection writes itself
/// (polls, new sessions, publishes) carry the same header lines from ``headerLines(origin:)``.
struct CORSPolicy: Sendable {
    /// Nil: every origin.
    let origins: Set<String>?

    /// Nil when CORS is off (`http.cors_origin` empty).
    init?(_ configured: [String]) {
        switch configured {
        case []: return nil
        case ["*"]: origins = nil
        default: origins = Set(configured)
        }
    }

    /// Whether a page of `origin` may read the answers.
    func allows(_ origin: String) -> Bool { origins?.contains(origin) ?? true }

    /// The CORS header lines of an answer to a request with this `Origin` (as hummingbird's
    /// middleware writes them for the router's endpoints): `*` for every origin, else the
    /// origin itself if listed, with `vary: Origin` either way for a list (a cache must not
    /// hand one origin's answer to another's page); nil for none.
    func headerLines(origin: String?) -> String? {
        guard let origin else { return nil }
        guard let origins else { return "access-control-allow-origin: *" }
        guard origin != "null", origins.contains(origin) else { return "vary: Origin" }
        return "access-control-allow-origin: \(origin)\r\nvary: Origin"
    }
}
