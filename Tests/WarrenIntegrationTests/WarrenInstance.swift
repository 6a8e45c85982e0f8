import AMQPClient
import Foundation
import TestSupport

/// A Warren process of its own for one test: its own port, exchange and node id.
struct WarrenInstance {
    let process: WarrenProcess
    let port: Int
    let exchange: String
    let nodeID: String

    static let brokerURL = ProcessInfo.processInfo.environment["WARREN_TEST_AMQP_URL"] ?? "amqp://guest:guest@127.0.0.1:5672/%2f"

    /// `openFiles`: the process's descriptor limit (set with util-linux's `prlimit`).
    static func start(_ extra: [String: String] = [:], exchange: String? = nil, openFiles: Int? = nil) async throws -> WarrenInstance {
        let port = try freePort()
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let exchange = exchange ?? "test.chat.\(suffix)"
        let nodeID = "test-\(suffix)"
        var env = ["WARREN_HTTP_LISTEN": "127.0.0.1:\(port)", "WARREN_AMQP_EXCHANGE": exchange, "WARREN_NODE_ID": nodeID,
                   "WARREN_AMQP_URL": brokerURL, "WARREN_LOG_LEVEL": "info",
                   // Tests publish far faster than a person and hold many polls per user; the
                   // per-user limits have tests of their own (GreedyClientTests) that set them.
                   "WARREN_LIMITS_PUBLISH_RATE": "0", "WARREN_LIMITS_MAX_CONNECTIONS_PER_USER": "0",
                   // The store has tests of its own (StoreTests), each with its own database and queue.
                   "WARREN_STORE_ENABLED": "false"]
        for (k, v) in extra { env[k] = v }
        let serve = ["serve", "--config", "bridge.toml"]
        let process = try openFiles.map {
            try WarrenProcess(["--nofile=\($0):\($0)", WarrenProcess.binary.path] + serve, environment: env,
                              executable: URL(fileURLWithPath: "/usr/bin/prlimit"))
        } ?? WarrenProcess(serve, environment: env)
        guard await process.waitForLog("warren is ready") else {
            process.terminate()
            throw SocketError(description: "warren did not become ready:\n\(process.log)")
        }
        return WarrenInstance(process: process, port: port, exchange: exchange, nodeID: nodeID)
    }

    func socket(_ user: String, device: String? = nil) async throws -> TestSocket {
        var query = "user=\(user)"
        if let device { query += "&device=\(device)" }
        return try await TestSocket.connect(port: port, query: query, name: user)
    }

    /// A socket of `user` (device `d`) subscribed to its inbox (`in`: every route naming the user)
    /// and to `room` live (`room`).
    func socketWithInboxAndRoom(_ user: String, room: String) async throws -> TestSocket {
        let s = try await socket(user, device: "d")
        _ = try await s.request(##"{"op":"sub","id":"in","pattern":"#.\##(user).#","mode":"inbox"}"##, expect: "subscribed")
        _ = try await s.request(##"{"op":"sub","id":"room","pattern":"\##(room)"}"##, expect: "subscribed")
        return s
    }

    /// A channel on a plain AMQP connection to the tests' broker (the connection closes with the process).
    static func amqpChannel() async throws -> (AMQPConnection, AMQPChannel) {
        let amqp = try await AMQPConnection.connect(configuration: try AMQPConfiguration(url: brokerURL))
        return (amqp, try await amqp.openChannel())
    }

    /// Stops the process (SIGTERM) and returns its exit status.
    @discardableResult
    func stop() async -> Int32? {
        process.process.signal(SIGTERM)
        return await process.waitForExit()
    }
}

/// A unique user name, so durable inboxes from other runs never interfere.
func uniqueUser(_ base: String) -> String { "\(base)\(UUID().uuidString.prefix(6).lowercased())" }
