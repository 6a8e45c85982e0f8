/// The conversation store's settings (docs/protocol.md, `[store]`).
public struct StoreSettings: Sendable, Equatable {
    /// Off: history, conversations and read markers answer `unavailable`, and nothing is kept.
    public var enabled = true
    /// `sqlite://<path>` (one node) or `postgres://user:pass@host:5432/db` (several nodes).
    public var url = "sqlite://warren.sqlite"
    /// The routes kept: `warren.store` is bound with these patterns.
    public var patterns: [String] = ["#"]
    /// Types never kept (besides transient envelopes).
    public var skipTypes: [String] = ["typing", "presence", "read"]
    /// Types kept but not counted as unread.
    public var uncountedTypes: [String] = ["notice", "command", "receipt", "typing", "presence", "read"]
    /// Messages older than this are deleted (seconds; default 90 days).
    public var maxAgeSeconds = 90 * 24 * 3600
    /// The largest history page a client may ask for.
    public var maxPage = 200
    /// At most this many messages are committed in one transaction; the writer's prefetch is twice this.
    public var batchSize = 500

    /// The durable queue every node consumes (competing consumers) to write the store. Nodes
    /// sharing a database share it; a second deployment on the same broker names its own.
    public var queue = "warren.store"
    /// Its type: `quorum` (replicated, what `auto` picks when `amqp.url` lists several brokers)
    /// or `classic`. A classic queue is on one broker node: what is published while that node
    /// is down is not stored.
    public var queueType = "classic"
    /// The page size when a client names none.
    public static let defaultPage = 50

    public init() {}

    /// Which database `url` names.
    public enum Backend: Sendable, Equatable {
        /// A file path (relative to the working directory unless absolute).
        case sqlite(path: String)
        /// A `postgres://` or `postgresql://` URL, as written.
        case postgres(url: String)

        public init?(url: String) {
            if url.hasPrefix("sqlite://") {
                let path = String(url.dropFirst("sqlite://".count))
                guard !path.isEmpty else { return nil }
                self = .sqlite(path: path)
            } else if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
                guard url.split(separator: "@").count <= 2, url.contains("/") else { return nil }
                self = .postgres(url: url)
            } else {
                return nil
            }
        }

        /// The URL with its password masked (for logs and `warren check`).
        public var redacted: String {
            switch self {
            case .sqlite(let path): return "sqlite://" + path
            case .postgres(let url):
                guard let at = url.lastIndex(of: "@"), let scheme = Substring(url).range(of: "://") else { return url }
                let credentials = url[scheme.upperBound..<at]
                guard let colon = credentials.firstIndex(of: ":") else { return url }
                return String(url[..<colon]) + ":***" + String(url[at...])
            }
        }
    }

    /// Whether an envelope of this type, transient or not, is kept.
    public func keeps(type: String, transient: Bool) -> Bool {
        !transient && !skipTypes.contains(type)
    }
}
