import AMQPClient
import Logging

/// Everything `bridge.toml` configures. Every key has a default, so an empty
/// file is a valid (development) configuration; every key can be overridden by
/// `WARREN_<SECTION>_<KEY>` in the environment.
public struct BridgeConfiguration: Sendable {
    public struct AMQP: Sendable {
        /// `amqp://user:pass@host:port/vhost`.
        public var url: String = "amqp://guest:guest@127.0.0.1:5672/%2f"
        /// The topic exchange conversations are published to.
        public var exchange: String = "chat"
        public var prefetch: Int = 100
        /// Seconds; 0 takes the broker's value.
        public var heartbeat: Int = 30
        public var reconnectInitialMilliseconds: Int = 100
        public var reconnectMaxMilliseconds: Int = 10_000
        /// The parsed URL plus heartbeat and backoff: what the AMQP client is given.
        public var client: AMQPConfiguration = AMQPConfiguration()
    }

    public struct HTTP: Sendable {
        public var listen: String = "127.0.0.1:8080"
    }

    public struct Log: Sendable {
        public var level: Logger.Level = .info
    }

    public var amqp = AMQP()
    public var http = HTTP()
    public var log = Log()
    /// This process's name among Warren nodes (used in its live queue's name).
    public var nodeID: String = ""

    public init() {}

    /// Parses and validates a configuration file's text. Throws the first problem
    /// found, naming the key, its line and the reason.
    public static func parse(_ text: String, environment: [String: String] = [:]) throws(ConfigError) -> BridgeConfiguration {
        var source = try ConfigSource(text: text, environment: environment)
        var config = BridgeConfiguration()

        config.amqp.url = try source.string("amqp", "url", default: config.amqp.url)
        config.amqp.exchange = try source.string("amqp", "exchange", default: config.amqp.exchange)
        config.amqp.prefetch = try source.int("amqp", "prefetch", default: config.amqp.prefetch, range: 1...65535)
        config.amqp.heartbeat = try source.int("amqp", "heartbeat", default: config.amqp.heartbeat, range: 0...3600)
        config.amqp.reconnectInitialMilliseconds = try source.int(
            "amqp", "reconnect_initial_ms", default: config.amqp.reconnectInitialMilliseconds, range: 1...600_000)
        config.amqp.reconnectMaxMilliseconds = try source.int(
            "amqp", "reconnect_max_ms", default: config.amqp.reconnectMaxMilliseconds, range: 1...3_600_000)
        do {
            var client = try AMQPConfiguration(url: config.amqp.url)
            client.heartbeat = UInt16(config.amqp.heartbeat)
            client.recovery = RecoveryPolicy(initialDelay: .milliseconds(Int64(config.amqp.reconnectInitialMilliseconds)),
                                             maxDelay: .milliseconds(Int64(config.amqp.reconnectMaxMilliseconds)))
            client.connectionName = "warren"
            config.amqp.client = client
        } catch {
            throw source.error("amqp", "url", "\(error)")
        }
        guard !config.amqp.exchange.isEmpty, config.amqp.exchange.utf8.count <= 255 else {
            throw source.error("amqp", "exchange", "must be 1-255 bytes")
        }

        config.http.listen = try source.string("http", "listen", default: config.http.listen)
        guard HostAndPort(config.http.listen) != nil else {
            throw source.error("http", "listen", "must be host:port")
        }

        let level = try source.string("log", "level", default: "info")
        guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
            throw source.error("log", "level", "must be one of trace, debug, info, notice, warning, error, critical")
        }
        config.log.level = parsed

        config.nodeID = try source.string("node", "id", default: "")

        if let unknown = source.unknownKeys(knownSections: ["amqp", "http", "log", "node"]).first { throw unknown }
        return config
    }
}

/// `host:port` as written in `http.listen` (IPv6 as `[::1]:8080`).
public struct HostAndPort: Sendable, Equatable {
    public var host: String
    public var port: Int

    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              (0...65535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        self.host = host
        self.port = port
    }
}
