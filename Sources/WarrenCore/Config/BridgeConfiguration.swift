import AMQPClient
import Foundation
import Logging

/// Everything `bridge.toml` configures. Every key has a default, so an empty
/// file is a valid (development) configuration; every key can be overridden by
/// `WARREN_<SECTION>_<KEY>` in the environment.
public struct BridgeConfiguration: Sendable {
    public struct AMQP: Sendable {
        /// `amqp://user:pass@host:port/vhost`, or several: the nodes of one cluster, tried in
        /// turn (same credentials and vhost).
        public var urls: [String] = ["amqp://guest:guest@127.0.0.1:5672/%2f"]
        /// The first broker URL.
        public var url: String { urls.first ?? "" }
        /// The topic exchange conversations are published to.
        public var exchange: String = "chat"
        public var prefetch: Int = 100
        /// Seconds; 0 takes the broker's value.
        public var heartbeat: Int = 30
        public var reconnectInitialMilliseconds: Int = 100
        public var reconnectMaxMilliseconds: Int = 10_000
        /// Broker connections the node's channels are spread over (the first also carries
        /// publishing and the live queue).
        public var connections: Int = 2
        /// Channels shared by declarations, bindings and deletes.
        public var administrationChannels: Int = 4
        /// Channels shared by consumers (inboxes, poll sessions), per prefetch value.
        public var consumptionChannels: Int = 16
        /// Past this many distinct live patterns on the node its live queue is bound with `#`
        /// (one binding; every message on the exchange reaches the node) instead of one binding
        /// per pattern. 0: always one per pattern.
        public var liveBindAllAfter: Int = 256
        /// The parsed URL plus heartbeat and backoff: what the AMQP client is given.
        public var client: AMQPConfiguration = AMQPConfiguration()
    }

    public struct HTTP: Sendable {
        public var listen: String = "127.0.0.1:8080"
        /// When set, `/metrics`, `/v1/stats` and `/dashboard` are served on this address (with
        /// `/healthz` and `/readyz`) and no longer on `listen`; empty: everything on `listen`.
        public var internalListen: String = ""
        /// Seconds a request head has, from its first byte (or blank line) to its end: every
        /// head of a connection, not only the first.
        public var headTimeout: Int = 10
        /// Seconds an idle keep-alive HTTP connection is kept (also: between two reads of a
        /// body, and for a client that reads none of its answers).
        public var idleTimeout: Int = 75
        /// Bytes of answers waiting for one client past which Warren stops reading its
        /// connection until they drain.
        public var maxPendingOutput: Int = 256 << 10
        /// Bytes of one request body.
        public var maxBody: Int = 1 << 20
        /// Bytes of request bodies held in memory by all connections together (past it, 503).
        public var maxBodyBytesInFlight: Int = 64 << 20
        /// What serves the public listener's connections without TLS.
        public var pollDoor: PollDoor = .standard
        /// Seconds between the comments that keep an idle event stream (`GET /v1/sse`) open
        /// through proxies.
        public var sseHeartbeat: Int = 15
        /// Connections the kernel queues for accepting (capped by `net.core.somaxconn`).
        public var backlog: Int = 4096
        /// PEM certificate chain and key: when both are set, Warren serves HTTPS and WSS itself.
        public var tlsCertificateFile: String?
        public var tlsKeyFile: String?
    }

    /// What serves the public listener's HTTP connections when it has no TLS (`http.poll_door`).
    public enum PollDoor: String, Sendable {
        /// NIO's channels, as every other listener.
        case nio
        /// Warren's own epoll threads: a poll answer is a `recv`, a `send` and a `setsockopt`;
        /// connections that need a channel (a WebSocket, the router's endpoints) are handed to
        /// NIO. Linux only: elsewhere it means `nio`.
        case epoll

        public static let standard = PollDoor.epoll
    }

    public struct Log: Sendable {
        public var level: Logger.Level = .info
        /// `text` (one readable line per event) or `json` (one JSON object per line).
        public var json = false
    }

    public enum AuthMode: String, Sendable {
        /// Development only: the user is `?user=`.
        case none
        /// HS256 JWTs; the user is the `sub` claim.
        case token
    }

    public struct Auth: Sendable {
        public var mode: AuthMode = .none
        /// How tokens are signed.
        public var algorithm: TokenAlgorithm = .hs256
        /// At least 32 bytes in token mode: the HS256 key, and in every token mode the key
        /// that signs poll session strings (shared by all nodes).
        public var secret: String = ""
        /// RS256 / ES256: the PEM text of the public key tokens are verified with.
        public var publicKeyPEM: String?
        /// RS256 / ES256: the PEM text of the private key `warren token` signs with.
        public var privateKeyPEM: String?
        /// Leeway, audience and issuer checks.
        public var rules = TokenRules()
        /// Allows `mode = "none"` on a non-loopback listen address.
        public var allowInsecure = false

        /// The authority that verifies (and, with a secret or private key, mints) tokens.
        public func makeAuthority() async throws(TokenKeyError) -> TokenAuthority {
            switch algorithm {
            case .hs256:
                guard secret.utf8.count >= 32 else { throw TokenKeyError(description: "auth.secret must be at least 32 bytes") }
                return await TokenAuthority.hs256(secret: secret, rules: rules)
            case .rs256, .es256:
                return try await TokenAuthority.publicKey(algorithm, publicPEM: publicKeyPEM, privatePEM: privateKeyPEM, rules: rules)
            }
        }
    }

    public struct WebSocket: Sendable {
        /// Seconds between server pings.
        public var pingInterval: Int = 25
        /// Seconds without a pong before the socket is closed.
        public var idleTimeout: Int = 60
    }

    public var amqp = AMQP()
    public var http = HTTP()
    public var log = Log()
    public var auth = Auth()
    public var acl = AccessPolicy.standard
    public var routes: [RouteClassifier.RouteClass] = []
    public var websocket = WebSocket()
    public var inbox = InboxSettings()
    public var limits = BridgeLimits()
    public var poll = PollSettings()
    public var store = StoreSettings()
    public var recover = RecoverySettings()
    public var presence = PresenceSettings()
    /// Serve the demo page at `/`.
    public var demo = true
    /// Seconds the drain after SIGTERM may take before the process exits anyway.
    public var shutdownGrace = 10
    /// This process's name among Warren nodes (used in its live queue's name).
    public var nodeID: String = ""

    public init() {}

    /// Parses and validates a configuration file's text. Throws the first problem
    /// found, naming the key, its line and the reason.
    public static func parse(_ text: String, environment: [String: String] = [:]) throws(ConfigError) -> BridgeConfiguration {
        var source = try ConfigSource(text: text, environment: environment)
        var config = BridgeConfiguration()

        config.amqp.urls = try source.stringOrArray("amqp", "url", default: config.amqp.urls)
        config.amqp.exchange = try source.string("amqp", "exchange", default: config.amqp.exchange)
        config.amqp.prefetch = try source.int("amqp", "prefetch", default: config.amqp.prefetch, range: 1...65535)
        config.amqp.heartbeat = try source.int("amqp", "heartbeat", default: config.amqp.heartbeat, range: 0...3600)
        config.amqp.reconnectInitialMilliseconds = try source.int(
            "amqp", "reconnect_initial_ms", default: config.amqp.reconnectInitialMilliseconds, range: 1...600_000)
        config.amqp.reconnectMaxMilliseconds = try source.int(
            "amqp", "reconnect_max_ms", default: config.amqp.reconnectMaxMilliseconds, range: 1...3_600_000)
        config.amqp.connections = try source.int("amqp", "connections", default: config.amqp.connections, range: 1...64)
        config.amqp.administrationChannels = try source.int("amqp", "administration_channels",
                                                            default: config.amqp.administrationChannels, range: 1...256)
        config.amqp.consumptionChannels = try source.int("amqp", "consumption_channels",
                                                         default: config.amqp.consumptionChannels, range: 1...1024)
        config.amqp.liveBindAllAfter = try source.int("amqp", "live_bind_all_after", default: config.amqp.liveBindAllAfter,
                                                      range: 0...1_000_000)
        do {
            var client = try AMQPConfiguration(urls: config.amqp.urls)
            client.heartbeat = UInt16(config.amqp.heartbeat)
            client.recovery = RecoveryPolicy(initialDelay: .milliseconds(Int64(config.amqp.reconnectInitialMilliseconds)),
                                             maxDelay: .milliseconds(Int64(config.amqp.reconnectMaxMilliseconds)))
            client.connectionName = "warren"
            config.amqp.client = client
        } catch {
            throw source.error("amqp", "url", "\(error)")
        }
        for (key, keyPath) in [("tls_ca_file", \AMQPConfiguration.TLSOptions.caFile),
                               ("tls_cert_file", \AMQPConfiguration.TLSOptions.certificateFile),
                               ("tls_key_file", \AMQPConfiguration.TLSOptions.privateKeyFile)] {
            let path = try source.string("amqp", key, default: "")
            guard !path.isEmpty else { continue }
            guard FileManager.default.isReadableFile(atPath: path) else { throw source.error("amqp", key, "cannot read \(path)") }
            if let problem = key == "tls_key_file" ? TLSFileCheck.privateKey(path) : TLSFileCheck.certificates(path) {
                throw source.error("amqp", key, problem)
            }
            config.amqp.client.tlsOptions[keyPath: keyPath] = path
        }
        if (config.amqp.client.tlsOptions.certificateFile == nil) != (config.amqp.client.tlsOptions.privateKeyFile == nil) {
            throw source.error("amqp", "tls_cert_file", "a client certificate needs both tls_cert_file and tls_key_file")
        }
        if let certificate = config.amqp.client.tlsOptions.certificateFile, let key = config.amqp.client.tlsOptions.privateKeyFile,
           let problem = TLSFileCheck.pair(certificate: certificate, key: key) {
            throw source.error("amqp", "tls_key_file", problem)
        }
        let serverName = try source.string("amqp", "tls_server_name", default: "")
        config.amqp.client.tlsOptions.serverName = serverName.isEmpty ? nil : serverName
        guard !config.amqp.exchange.isEmpty, config.amqp.exchange.utf8.count <= 255 else {
            throw source.error("amqp", "exchange", "must be 1-255 bytes")
        }

        config.http.listen = try source.string("http", "listen", default: config.http.listen)
        guard HostAndPort(config.http.listen) != nil else {
            throw source.error("http", "listen", "must be host:port")
        }
        config.http.internalListen = try source.string("http", "internal_listen", default: config.http.internalListen)
        if !config.http.internalListen.isEmpty {
            guard let inside = HostAndPort(config.http.internalListen) else {
                throw source.error("http", "internal_listen", "must be host:port, or empty to serve the operations endpoints on http.listen")
            }
            let outside = HostAndPort(config.http.listen)!
            let wildcard = ["0.0.0.0", "::"]
            guard inside.port == 0 || inside.port != outside.port
                  || (inside.host != outside.host && !wildcard.contains(inside.host) && !wildcard.contains(outside.host)) else {
                throw source.error("http", "internal_listen", "must use another port than http.listen (\(config.http.listen))")
            }
        }

        let level = try source.string("log", "level", default: "info")
        guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
            throw source.error("log", "level", "must be one of trace, debug, info, notice, warning, error, critical")
        }
        config.log.level = parsed
        let format = try source.string("log", "format", default: "text")
        guard format == "text" || format == "json" else { throw source.error("log", "format", "must be text or json") }
        config.log.json = format == "json"
        config.nodeID = try source.string("node", "id", default: "")
        guard config.nodeID.isEmpty || RouteKey.isValidWord(config.nodeID) else {
            throw source.error("node", "id", "must be \(RouteKey.wordRule)")
        }
        config.demo = try source.bool("http", "demo", default: config.demo)
        config.http.headTimeout = try source.int("http", "head_timeout", default: config.http.headTimeout, range: 1...300)
        config.http.maxPendingOutput = try source.int("http", "max_pending_output", default: config.http.maxPendingOutput,
                                                      range: 4096...(64 << 20))
        config.http.maxBody = try source.int("http", "max_body", default: config.http.maxBody, range: 1024...(64 << 20))
        config.http.maxBodyBytesInFlight = try source.int("http", "max_body_bytes_in_flight", default: config.http.maxBodyBytesInFlight,
                                                          range: config.http.maxBody...(16 << 30))
        let door = try source.string("http", "poll_door", default: config.http.pollDoor.rawValue)
        guard let pollDoor = PollDoor(rawValue: door) else { throw source.error("http", "poll_door", "must be nio or epoll") }
        config.http.pollDoor = pollDoor
        config.http.backlog = try source.int("http", "backlog", default: config.http.backlog, range: 1...65_535)
        config.http.sseHeartbeat = try source.int("http", "sse_heartbeat", default: config.http.sseHeartbeat, range: 1...300)
        config.http.idleTimeout = try source.int("http", "idle_timeout", default: config.http.idleTimeout, range: 1...3600)
        for key in ["tls_cert_file", "tls_key_file"] {
            let path = try source.string("http", key, default: "")
            guard !path.isEmpty else { continue }
            guard FileManager.default.isReadableFile(atPath: path) else { throw source.error("http", key, "cannot read \(path)") }
            if let problem = key == "tls_key_file" ? TLSFileCheck.privateKey(path) : TLSFileCheck.certificates(path) {
                throw source.error("http", key, problem)
            }
            if key == "tls_cert_file" { config.http.tlsCertificateFile = path } else { config.http.tlsKeyFile = path }
        }
        if (config.http.tlsCertificateFile == nil) != (config.http.tlsKeyFile == nil) {
            throw source.error("http", "tls_cert_file", "HTTPS needs both tls_cert_file and tls_key_file")
        }
        if let certificate = config.http.tlsCertificateFile, let key = config.http.tlsKeyFile,
           let problem = TLSFileCheck.pair(certificate: certificate, key: key) {
            throw source.error("http", "tls_key_file", problem)
        }

        let mode = try source.string("auth", "mode", default: config.auth.mode.rawValue)
        guard let authMode = AuthMode(rawValue: mode) else { throw source.error("auth", "mode", "must be none or token") }
        config.auth.mode = authMode
        config.auth.secret = try source.string("auth", "secret", default: "")
        let secretFile = try source.string("auth", "secret_file", default: "")
        if !secretFile.isEmpty {
            let text = try source.file("auth", "secret_file", secretFile)
            config.auth.secret = text.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        if authMode == .token, config.auth.secret.utf8.count < 32 {
            throw source.error("auth", secretFile.isEmpty ? "secret" : "secret_file",
                               "token mode needs a secret of at least 32 bytes (the HS256 key; it also signs poll sessions)")
        }
        let algorithm = try source.string("auth", "algorithm", default: config.auth.algorithm.rawValue)
        guard let tokenAlgorithm = TokenAlgorithm(rawValue: algorithm.uppercased()) else {
            throw source.error("auth", "algorithm", "must be HS256, RS256 or ES256")
        }
        config.auth.algorithm = tokenAlgorithm
        for (key, keyPath) in [("public_key_file", \Auth.publicKeyPEM), ("private_key_file", \Auth.privateKeyPEM)] {
            let path = try source.string("auth", key, default: "")
            guard !path.isEmpty else { continue }
            let pem = try source.file("auth", key, path)
            do { try TokenAuthority.checkKey(pem, tokenAlgorithm, isPrivate: key == "private_key_file") } catch {
                throw source.error("auth", key, "\(path): \(error.description)")
            }
            config.auth[keyPath: keyPath] = pem
        }
        if authMode == .token, tokenAlgorithm != .hs256 {
            guard config.auth.publicKeyPEM != nil || config.auth.privateKeyPEM != nil else {
                throw source.error("auth", "public_key_file", "\(tokenAlgorithm.rawValue) needs a public key file")
            }
        }
        config.auth.rules.leeway = try source.int("auth", "leeway", default: config.auth.rules.leeway, range: 0...600)
        let audience = try source.string("auth", "audience", default: "")
        config.auth.rules.audience = audience.isEmpty ? nil : audience
        let issuer = try source.string("auth", "issuer", default: "")
        config.auth.rules.issuer = issuer.isEmpty ? nil : issuer
        config.auth.rules.userClaim = try source.string("auth", "user_claim", default: config.auth.rules.userClaim)
        guard !config.auth.rules.userClaim.isEmpty, !TokenRules.reservedClaims.contains(config.auth.rules.userClaim) else {
            throw source.error("auth", "user_claim", "must name a claim other than \(TokenRules.reservedClaims.sorted().joined(separator: ", "))")
        }
        config.auth.allowInsecure = try source.bool("auth", "allow_insecure", default: false)
        if authMode == .none, !config.auth.allowInsecure, !(HostAndPort(config.http.listen)?.isLoopback ?? false) {
            throw source.error("auth", "mode", "\"none\" trusts ?user= and is refused on a non-loopback http.listen "
                               + "(\(config.http.listen)); use token mode, or set auth.allow_insecure = true")
        }

        config.acl = AccessPolicy(subscribe: try source.stringArray("acl", "subscribe", default: config.acl.subscribe),
                                  publish: try source.stringArray("acl", "publish", default: config.acl.publish))
        do { try config.acl.validate() } catch { throw source.error("acl", "subscribe", "invalid pattern: \(error)") }

        for entry in try source.tableArray("route") {
            guard let name = entry.values["name"], RouteKey.isValidWord(name), name != RouteClassifier.other else {
                throw ConfigError(key: "route.name", line: entry.line, reason: "each [[route]] needs a name word (not 'other')")
            }
            guard let text = entry.values["pattern"], let pattern = try? TopicPattern(text) else {
                throw ConfigError(key: "route.pattern", line: entry.line, reason: "each [[route]] needs a valid topic pattern")
            }
            if let unknown = entry.values.keys.first(where: { $0 != "name" && $0 != "pattern" }) {
                throw ConfigError(key: "route.\(unknown)", line: entry.line, reason: "unknown key")
            }
            // The name is the `route` label of every metric and a key of /v1/stats: two classes
            // of one name were one series in /metrics and a repeated key in the JSON.
            guard !config.routes.contains(where: { $0.name == name }) else {
                throw ConfigError(key: "route.name", line: entry.line, reason: "'\(name)' names another [[route]] already")
            }
            config.routes.append(.init(name: name, pattern: pattern))
        }

        config.websocket.pingInterval = try source.int("websocket", "ping_interval", default: config.websocket.pingInterval, range: 1...3600)
        config.websocket.idleTimeout = try source.int("websocket", "idle_timeout", default: config.websocket.idleTimeout, range: 2...7200)

        config.inbox.prefetch = try source.int("inbox", "prefetch", default: config.inbox.prefetch, range: 1...65535)
        config.inbox.ackTimeout = try source.int("inbox", "ack_timeout", default: config.inbox.ackTimeout, range: 1...86_400)
        config.inbox.expiresMilliseconds = try source.int("inbox", "expires_ms", default: config.inbox.expiresMilliseconds,
                                                          range: 1000...Int(Int32.max))
        config.inbox.maxLength = try source.int("inbox", "max_length", default: config.inbox.maxLength, range: 1...100_000_000)
        config.inbox.overflow = try source.string("inbox", "overflow", default: config.inbox.overflow)
        guard ["drop-head", "reject-publish"].contains(config.inbox.overflow) else {
            throw source.error("inbox", "overflow", "must be drop-head or reject-publish")
        }
        config.inbox.queueType = try source.queueType("inbox", brokers: config.amqp.urls.count)

        config.shutdownGrace = try source.int("shutdown", "grace", default: config.shutdownGrace, range: 1...600)

        config.poll.sessionTTL = try source.int("poll", "session_ttl", default: config.poll.sessionTTL, range: 5...86_400)
        config.poll.maxWait = try source.int("poll", "max_wait", default: config.poll.maxWait, range: 0...300)
        config.poll.maxBatch = try source.int("poll", "max_batch", default: config.poll.maxBatch, range: 1...10_000)
        config.poll.lease = try source.int("poll", "lease", default: config.poll.lease, range: 1...3600)
        config.poll.maxLength = try source.int("poll", "max_length", default: config.poll.maxLength, range: 1...10_000_000)
        // Lower-cased: a browser sends its origin's scheme and host so, and nothing else is in one.
        config.poll.corsOrigins = try source.stringOrArray("http", "cors_origin", default: config.poll.corsOrigins)
            .filter { !$0.isEmpty }.map { $0.lowercased() }
        for origin in config.poll.corsOrigins where !(origin == "*" && config.poll.corsOrigins.count == 1) && !Self.isOrigin(origin) {
            throw source.error("http", "cors_origin", origin == "*"
                ? "\"*\" allows every origin: it stands alone, not in a list"
                : "\(origin) is not an origin: scheme://host or scheme://host:port, with no path, not even a trailing /")
        }

        config.limits.maxMessageBytes = try source.int("limits", "max_message_bytes", default: config.limits.maxMessageBytes,
                                                       range: 256...BridgeLimits.largestMessageBytes)
        config.limits.maxFrameBytes = try source.int("limits", "max_frame_bytes", default: config.limits.maxFrameBytes,
                                                     range: 1024...(64 << 20))
        config.limits.maxBadFrames = try source.int("limits", "max_bad_frames", default: config.limits.maxBadFrames, range: 1...100_000)
        config.limits.maxSubscriptions = try source.int("limits", "max_subscriptions", default: config.limits.maxSubscriptions,
                                                        range: 1...100_000)
        config.limits.outboundBufferBytes = try source.int("limits", "outbound_buffer_bytes", default: config.limits.outboundBufferBytes,
                                                           range: 4096...(1 << 30))
        config.limits.outboundHardCapBytes = try source.int("limits", "outbound_hard_cap_bytes",
                                                            default: config.limits.outboundHardCapBytes, range: 0...(1 << 31))
        config.limits.slowGraceSeconds = try source.int("websocket", "slow_grace", default: config.limits.slowGraceSeconds, range: 0...600)
        config.limits.maxPendingPublishes = try source.int("limits", "max_pending_publishes", default: config.limits.maxPendingPublishes,
                                                           range: 1...100_000)
        config.limits.maxConnectionsPerUser = try source.int("limits", "max_connections_per_user",
                                                             default: config.limits.maxConnectionsPerUser, range: 0...1_000_000)
        config.limits.maxDevicesPerUser = try source.int("limits", "max_devices_per_user",
                                                         default: config.limits.maxDevicesPerUser, range: 0...1_000_000)
        config.limits.publishRate = try source.int("limits", "publish_rate", default: config.limits.publishRate, range: 0...1_000_000)
        config.limits.publishBurst = try source.int("limits", "publish_burst", default: config.limits.publishBurst, range: 1...10_000_000)
        config.limits.queryRate = try source.int("limits", "query_rate", default: config.limits.queryRate, range: 0...1_000_000)
        config.limits.queryBurst = try source.int("limits", "query_burst", default: config.limits.queryBurst, range: 1...10_000_000)

        config.store.enabled = try source.bool("store", "enabled", default: config.store.enabled)
        config.store.url = try source.string("store", "url", default: config.store.url)
        guard StoreSettings.Backend(url: config.store.url) != nil else {
            throw source.error("store", "url", "must be sqlite://<path> or postgres://user:pass@host:5432/db")
        }
        config.store.queue = try source.string("store", "queue", default: config.store.queue)
        guard !config.store.queue.isEmpty, config.store.queue.utf8.count <= 255, !config.store.queue.hasPrefix("amq.") else {
            throw source.error("store", "queue", "must be a queue name of 1-255 bytes (not amq.*)")
        }
        config.store.queueType = try source.queueType("store", brokers: config.amqp.urls.count)
        config.store.patterns = try source.stringArray("store", "patterns", default: config.store.patterns)
        guard !config.store.patterns.isEmpty else { throw source.error("store", "patterns", "must name at least one pattern") }
        for pattern in config.store.patterns where (try? TopicPattern(pattern)) == nil {
            throw source.error("store", "patterns", "'\(pattern)' is not a topic pattern")
        }
        for (key, keyPath) in [("skip_types", \StoreSettings.skipTypes), ("uncounted_types", \StoreSettings.uncountedTypes)] {
            config.store[keyPath: keyPath] = try source.stringArray("store", key, default: config.store[keyPath: keyPath])
            if let bad = config.store[keyPath: keyPath].first(where: { !Envelope.isValidType($0) }) {
                throw source.error("store", key, "'\(bad)' is not a message type (1-64 bytes of [A-Za-z0-9_:-])")
            }
        }
        let maxAge = try source.string("store", "max_age", default: "90d")
        guard let maxAgeSeconds = DurationText.seconds(maxAge), maxAgeSeconds >= 60 else {
            throw source.error("store", "max_age", "must be a duration from a minute to a hundred years, like 90d, 12h or 30m")
        }
        config.store.maxAgeSeconds = maxAgeSeconds
        config.store.maxPage = try source.int("store", "max_page", default: config.store.maxPage, range: 1...10_000)
        config.store.batchSize = try source.int("store", "batch_size", default: config.store.batchSize, range: 1...10_000)

        config.recover.maxMessages = try source.int("recover", "max_messages", default: config.recover.maxMessages, range: 1...100_000)
        config.recover.waitSeconds = try source.int("recover", "wait", default: config.recover.waitSeconds, range: 1...120)

        config.presence.enabled = try source.bool("presence", "enabled", default: config.presence.enabled)
        config.presence.timeoutSeconds = try source.int("presence", "timeout", default: config.presence.timeoutSeconds, range: 3...3600)

        let sections: Set<String> = ["amqp", "http", "log", "node", "auth", "acl", "route", "websocket",
                                     "inbox", "limits", "poll", "store", "recover", "presence", "shutdown"]
        if let unknown = source.unknownKeys(knownSections: sections).first { throw unknown }
        if let unknown = source.unknownEnvironment(knownSections: sections).first { throw unknown }
        return config
    }
}

extension BridgeConfiguration {
    /// The effective configuration as TOML, secrets masked: what `warren check` prints.
    public var effectiveDescription: String {
        func q(_ s: String) -> String { "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
        func list(_ l: [String]) -> String { "[" + l.map(q).joined(separator: ", ") + "]" }
        var lines: [String] = []
        let urls = amqp.client.redactedURLs
        lines += ["[amqp]", "url = \(urls.count == 1 ? q(urls[0]) : "[" + urls.map(q).joined(separator: ", ") + "]")", "exchange = \(q(amqp.exchange))", "prefetch = \(amqp.prefetch)",
                  "heartbeat = \(amqp.heartbeat)", "reconnect_initial_ms = \(amqp.reconnectInitialMilliseconds)",
                  "reconnect_max_ms = \(amqp.reconnectMaxMilliseconds)", "connections = \(amqp.connections)",
                  "administration_channels = \(amqp.administrationChannels)",
                  "consumption_channels = \(amqp.consumptionChannels)", "live_bind_all_after = \(amqp.liveBindAllAfter)",
                  "tls_ca_file = \(q(amqp.client.tlsOptions.caFile ?? ""))", "tls_cert_file = \(q(amqp.client.tlsOptions.certificateFile ?? ""))",
                  "tls_key_file = \(q(amqp.client.tlsOptions.privateKeyFile ?? ""))",
                  "tls_server_name = \(q(amqp.client.tlsOptions.serverName ?? ""))", ""]
        lines += ["[http]", "listen = \(q(http.listen))", "internal_listen = \(q(http.internalListen))", "demo = \(demo)", "cors_origin = \(poll.corsOrigins.count <= 1 ? q(poll.corsOrigins.first ?? "") : list(poll.corsOrigins))",
                  "head_timeout = \(http.headTimeout)", "idle_timeout = \(http.idleTimeout)", "backlog = \(http.backlog)",
                  "max_pending_output = \(http.maxPendingOutput)", "max_body = \(http.maxBody)",
                  "max_body_bytes_in_flight = \(http.maxBodyBytesInFlight)", "poll_door = \(q(http.pollDoor.rawValue))", "sse_heartbeat = \(http.sseHeartbeat)",
                  "tls_cert_file = \(q(http.tlsCertificateFile ?? ""))", "tls_key_file = \(q(http.tlsKeyFile ?? ""))", ""]
        lines += ["[auth]", "mode = \(q(auth.mode.rawValue))", "algorithm = \(q(auth.algorithm.rawValue))",
                  "secret = \(q(auth.secret.isEmpty ? "" : "***"))",
                  "public_key = \(auth.publicKeyPEM == nil ? "none" : "loaded")", "private_key = \(auth.privateKeyPEM == nil ? "none" : "***")",
                  "leeway = \(auth.rules.leeway)", "audience = \(q(auth.rules.audience ?? ""))", "issuer = \(q(auth.rules.issuer ?? ""))",
                  "user_claim = \(q(auth.rules.userClaim))",
                  "allow_insecure = \(auth.allowInsecure)", ""]
        lines += ["[acl]", "subscribe = \(list(acl.subscribe))", "publish = \(list(acl.publish))", ""]
        for r in routes { lines += ["[[route]]", "name = \(q(r.name))", "pattern = \(q(r.pattern.value))", ""] }
        lines += ["[websocket]", "ping_interval = \(websocket.pingInterval)", "idle_timeout = \(websocket.idleTimeout)",
                  "slow_grace = \(limits.slowGraceSeconds)", ""]
        lines += ["[inbox]", "prefetch = \(inbox.prefetch)", "ack_timeout = \(inbox.ackTimeout)", "expires_ms = \(inbox.expiresMilliseconds)", "max_length = \(inbox.maxLength)",
                  "overflow = \(q(inbox.overflow))", "queue_type = \(q(inbox.queueType))", ""]
        lines += ["[poll]", "session_ttl = \(poll.sessionTTL)", "max_wait = \(poll.maxWait)", "max_batch = \(poll.maxBatch)",
                  "lease = \(poll.lease)", "max_length = \(poll.maxLength)", ""]
        lines += ["[limits]", "max_message_bytes = \(limits.maxMessageBytes)", "max_frame_bytes = \(limits.maxFrameBytes)",
                  "max_bad_frames = \(limits.maxBadFrames)", "max_subscriptions = \(limits.maxSubscriptions)",
                  "outbound_buffer_bytes = \(limits.outboundBufferBytes)", "outbound_hard_cap_bytes = \(limits.outboundHardCapBytes)", "max_pending_publishes = \(limits.maxPendingPublishes)",
                  "max_connections_per_user = \(limits.maxConnectionsPerUser)",
                  "max_devices_per_user = \(limits.maxDevicesPerUser)", "publish_rate = \(limits.publishRate)",
                  "publish_burst = \(limits.publishBurst)", "query_rate = \(limits.queryRate)", "query_burst = \(limits.queryBurst)", ""]
        lines += ["[store]", "enabled = \(store.enabled)", "url = \(q(StoreSettings.Backend(url: store.url)?.redacted ?? store.url))",
                  "queue = \(q(store.queue))", "queue_type = \(q(store.queueType))",
                  "patterns = \(list(store.patterns))", "skip_types = \(list(store.skipTypes))",
                  "uncounted_types = \(list(store.uncountedTypes))", "max_age = \(q(DurationText.text(store.maxAgeSeconds)))",
                  "max_page = \(store.maxPage)", "batch_size = \(store.batchSize)", ""]
        lines += ["[recover]", "max_messages = \(recover.maxMessages)", "wait = \(recover.waitSeconds)", ""]
        lines += ["[presence]", "enabled = \(presence.enabled)", "timeout = \(presence.timeoutSeconds)", ""]
        lines += ["[shutdown]", "grace = \(shutdownGrace)", ""]
        lines += ["[log]", "level = \(q(log.level.rawValue))", "format = \(q(log.json ? "json" : "text"))", ""]
        lines += ["[node]", "id = \(q(nodeID))"]
        return lines.joined(separator: "\n")
    }
}

extension BridgeConfiguration {
    /// A web origin as a browser's `Origin` header carries it: `scheme://host` or
    /// `scheme://host:port`, nothing after (a trailing `/` would never match one).
    static func isOrigin(_ text: String) -> Bool {
        guard !text.hasSuffix("/"), let c = URLComponents(string: text), let scheme = c.scheme, !scheme.isEmpty,
              let host = c.host, !host.isEmpty else { return false }
        return c.percentEncodedPath.isEmpty && c.query == nil && c.fragment == nil && c.user == nil && c.password == nil
    }
}
