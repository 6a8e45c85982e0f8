import Foundation

/// How a ``WarrenClient`` reaches Warren and authenticates.
public struct WarrenClientConfiguration: Sendable {
    /// Warren's http(s) base URL, e.g. `http://127.0.0.1:8080`.
    public var url: URL
    /// A JWT (token mode).
    public var token: String?
    /// The user (`auth.mode = "none"` only).
    public var user: String?
    /// Selects the inbox (default `default`). Clients that share a device share its inbox: each
    /// inbox message reaches one of them, so give each process that must see every message its own.
    public var device: String
    /// Asked for a fresh token when Warren closes with 4401 or answers 401.
    public var getToken: (@Sendable () async throws -> String)?
    /// Default: the WebSocket, long-polling where it cannot open.
    public var transports: [Transport] = [.webSocket, .polling]
    /// The WebSocket endpoint when it is not `<url>/v1/ws` (ws or wss).
    public var webSocketURL: URL?
    /// Reconnect backoff: exponential from `backoffInitial` to `backoffMax`, full jitter.
    public var backoffInitial: Duration = .milliseconds(250)
    public var backoffMax: Duration = .seconds(15)
    /// Seconds a long-poll waits.
    public var pollWait: Int = 25
    /// How often a long-polling client tries the WebSocket again.
    public var retryWebSocketAfter: Duration = .seconds(30)
    /// A WebSocket silent this long is pinged. A connection can go silent without closing (a
    /// network that dropped, a machine that slept); this is how the client finds out.
    public var heartbeat: Duration = .seconds(25)
    /// A WebSocket still silent this long after its ping is lost (and reconnected), as is one
    /// whose upgrade is unanswered this long; an HTTP request silent this long (a long-poll: this
    /// long past its wait) fails with `unavailable` and is retried as the call says.
    public var timeout: Duration = .seconds(20)

    public init(url: URL, token: String? = nil, user: String? = nil, device: String = "default",
                getToken: (@Sendable () async throws -> String)? = nil) {
        self.url = url
        self.token = token
        self.user = user
        self.device = device
        self.getToken = getToken
    }

    /// The WebSocket endpoint.
    var webSocketEndpoint: URL {
        if let webSocketURL { return webSocketURL }
        var c = URLComponents(url: url, resolvingAgainstBaseURL: false)!
        c.scheme = c.scheme == "https" ? "wss" : "ws"
        c.path = (c.path.hasSuffix("/") ? String(c.path.dropLast()) : c.path) + "/v1/ws"
        return c.url!
    }
}
