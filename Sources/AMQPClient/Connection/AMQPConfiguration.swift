import NIOCore

/// Where and how to connect, and how to recover.
public struct AMQPConfiguration: Sendable, Equatable {
    public var host: String = "127.0.0.1"
    public var port: Int = 5672
    public var username: String = "guest"
    public var password: String = "guest"
    public var vhost: String = "/"
    /// `amqps://`: TLS to the broker (swift-nio-ssl), verified against ``tlsOptions``.
    public var tls: Bool = false
    public var tlsOptions = TLSOptions()
    /// Heartbeat interval we ask for, in seconds (0 = take the broker's).
    public var heartbeat: UInt16 = 60
    public var channelMax: UInt16 = 2047
    public var frameMax: UInt32 = 131_072
    /// TCP connect plus the AMQP handshake must finish within this.
    public var connectTimeout: TimeAmount = .seconds(10)
    /// Shown in the management UI.
    public var connectionName: String?
    public var recovery: RecoveryPolicy = .init()
    /// Further brokers of the same cluster (same credentials, vhost and TLS), tried in turn
    /// after `host:port` when connecting and when a connection is lost.
    public var alternates: [Endpoint] = []

    public init() {}

    /// One broker address.
    public struct Endpoint: Sendable, Equatable {
        public var host: String
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    /// Every broker, `host:port` first.
    public var endpoints: [Endpoint] { [Endpoint(host: host, port: port)] + alternates }

    /// Parses a list of URLs of one cluster's nodes: the first gives everything, the others
    /// their host and port, and must agree with it on scheme, user, password and vhost.
    public init(urls: [String]) throws(AMQPError) {
        guard let first = urls.first else { throw .invalidURL("no broker URL") }
        self = try AMQPConfiguration(url: first)
        for url in urls.dropFirst() {
            let other = try AMQPConfiguration(url: url)
            guard other.tls == tls, other.username == username, other.password == password, other.vhost == vhost else {
                throw .invalidURL("every broker URL must have the same scheme, user, password and vhost")
            }
            alternates.append(Endpoint(host: other.host, port: other.port))
        }
    }

    /// How an `amqps://` connection is verified and which client certificate it shows.
    public struct TLSOptions: Sendable, Equatable {
        /// PEM file of the CA(s) the broker's certificate must chain to; nil = the system's trust store.
        public var caFile: String?
        /// PEM files of a client certificate (chain) and its key, for brokers that require one.
        public var certificateFile: String?
        public var privateKeyFile: String?
        /// The name the broker's certificate must carry; nil = the URL's host.
        public var serverName: String?

        public init(caFile: String? = nil, certificateFile: String? = nil, privateKeyFile: String? = nil, serverName: String? = nil) {
            self.caFile = caFile
            self.certificateFile = certificateFile
            self.privateKeyFile = privateKeyFile
            self.serverName = serverName
        }
    }

    /// Parses `amqp://user:pass@host:port/vhost?heartbeat=10&connection_timeout=5000`.
    ///
    /// User, password and vhost are percent-decoded (`%2f` is `/`). A missing
    /// path or a lone `/` means the default vhost `/`. Query keys: `heartbeat`
    /// (s), `connection_timeout` (ms), `channel_max`, `frame_max`.
    public init(url: String) throws(AMQPError) {
        self.init()
        var rest = Substring(url)
        if rest.hasPrefix("amqp://") {
            rest = rest.dropFirst(7)
        } else if rest.hasPrefix("amqps://") {
            rest = rest.dropFirst(8)
            tls = true
            port = 5671
        } else {
            throw .invalidURL("scheme must be amqp:// or amqps://")
        }
        var query: Substring = ""
        if let q = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: q)...]
            rest = rest[..<q]
        }
        var path: Substring?
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                username = try Self.percentDecode(userInfo[..<colon], "user")
                password = try Self.percentDecode(userInfo[userInfo.index(after: colon)...], "password")
            } else {
                username = try Self.percentDecode(userInfo, "user")
            }
        }
        // host[:port], with [v6] literals
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw .invalidURL("unclosed [ in host") }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            rest = rest[rest.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw .invalidURL("junk after host") }
                port = try Self.port(rest.dropFirst())
            }
        } else if let colon = rest.firstIndex(of: ":") {
            host = String(rest[..<colon])
            port = try Self.port(rest[rest.index(after: colon)...])
        } else if !rest.isEmpty {
            host = String(rest)
        }
        guard !host.isEmpty else { throw .invalidURL("empty host") }
        guard host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":" || $0 == "_" || $0 == "%" }) else {
            throw .invalidURL("invalid host '\(host)'")
        }
        if let path, !path.isEmpty {
            vhost = try Self.percentDecode(path, "vhost")
        }
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1)
            let key = String(parts[0])
            let value = parts.count > 1 ? String(parts[1]) : ""
            switch key {
            case "heartbeat":
                guard let v = UInt16(value) else { throw .invalidURL("heartbeat must be 0...65535 seconds") }
                heartbeat = v
            case "connection_timeout":
                guard let v = Int64(value), v > 0 else { throw .invalidURL("connection_timeout must be positive milliseconds") }
                connectTimeout = .milliseconds(v)
            case "channel_max":
                guard let v = UInt16(value) else { throw .invalidURL("channel_max must be 0...65535") }
                channelMax = v
            case "frame_max":
                guard let v = UInt32(value), v == 0 || v >= AMQPFrame.minimumFrameMax else {
                    throw .invalidURL("frame_max must be 0 or at least 4096")
                }
                frameMax = v
            default:
                break // unknown query keys are ignored, as other clients do
            }
        }
    }

    /// The URL(s) with the password masked, for logs.
    public var redactedDescription: String { redactedURLs.joined(separator: ", ") }

    /// Each broker's URL with the password masked.
    public var redactedURLs: [String] {
        let scheme = tls ? "amqps" : "amqp"
        let v = vhost == "/" ? "" : "/" + vhost
        return endpoints.map { e in
            let h = e.host.contains(":") ? "[\(e.host)]" : e.host
            return "\(scheme)://\(username):***@\(h):\(e.port)\(v)"
        }
    }

    private static func port(_ s: Substring) throws(AMQPError) -> Int {
        guard let p = Int(s), (1...65535).contains(p) else { throw .invalidURL("port must be 1...65535") }
        return p
    }

    static func percentDecode(_ s: Substring, _ what: String) throws(AMQPError) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.utf8.count)
        var it = s.utf8.makeIterator()
        while let c = it.next() {
            if c == UInt8(ascii: "%") {
                guard let h = it.next(), let l = it.next(), let hv = hexValue(h), let lv = hexValue(l) else {
                    throw .invalidURL("bad percent-escape in \(what)")
                }
                bytes.append(hv << 4 | lv)
            } else {
                bytes.append(c)
            }
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else { throw .invalidURL("\(what) is not UTF-8") }
        return decoded
    }

    private static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
