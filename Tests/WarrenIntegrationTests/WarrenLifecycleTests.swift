import AMQPClient
import Foundation
import TestSupport
import NIOCore
import NIOPosix
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

@Suite("warren executable", .serialized)
struct WarrenLifecycleTests {
    static let brokerURL = ProcessInfo.processInfo.environment["WARREN_TEST_AMQP_URL"] ?? "amqp://guest:guest@127.0.0.1:5672/%2f"

    /// Starts with the shipped bridge.toml, declares the exchange, answers /readyz, exits cleanly on SIGTERM.
    @Test func servesWithShippedConfigAndExitsOnSIGTERM() async throws {
        let exchange = "test.warren.\(UUID().uuidString.prefix(8).lowercased())"
        let port = WarrenProcess.freePort()
        let warren = try WarrenProcess(["serve", "--config", "bridge.toml"], environment: [
            "WARREN_AMQP_EXCHANGE": exchange,
            "WARREN_AMQP_URL": Self.brokerURL,
            "WARREN_HTTP_LISTEN": "127.0.0.1:\(port)",
        ])
        defer { warren.terminate() }
        let ready = await warren.waitForLog("warren is ready")
        #expect(ready, "log so far:\n\(warren.log)")

        // The exchange exists: a passive declare succeeds.
        let connection = try await AMQPConnection.connect(configuration: try AMQPConfiguration(url: Self.brokerURL))
        let channel = try await connection.openChannel()
        try await channel.exchangeDeclare(exchange, type: "topic", passive: true)

        let (_, response) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/readyz")!)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)

        warren.process.signal(SIGTERM)
        let status = await warren.waitForExit()
        #expect(status == 0, "log:\n\(warren.log)")
        print("warren log:\n\(warren.log)")
        #expect(warren.log.contains("warren stopped"))
        try await channel.exchangeDelete(exchange)
        await connection.close()
    }

    /// An unreachable broker is one clear log line per attempt and retries, not a crash.
    @Test func unreachableBrokerIsRetried() async throws {
        let warren = try WarrenProcess(["serve", "--config", "bridge.toml"], environment: [
            "WARREN_AMQP_URL": "amqp://guest:guest@127.0.0.1:1/%2f",
            "WARREN_AMQP_RECONNECT_MAX_MS": "200",
            "WARREN_HTTP_LISTEN": "127.0.0.1:\(WarrenProcess.freePort())",
        ])
        defer { warren.terminate() }
        let retried = await warren.waitForLog("cannot reach the broker; retrying", times: 3)
        #expect(retried, "log so far:\n\(warren.log)")
        #expect(warren.process.isRunning)
        warren.process.signal(SIGTERM)
        let status = await warren.waitForExit()
        #expect(status == 0, "log:\n\(warren.log)")
        #expect(!warren.log.contains("Fatal error"))
    }

    /// The listening port is taken: one clear log line, and Warren exits with a failure after
    /// closing its store (a debug build asserts on a SQLite connection left open).
    @Test func aTakenPortIsReportedAndWarrenExits() async throws {
        let holder = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(holder.localAddress?.port)
        let database = FileManager.default.temporaryDirectory.appendingPathComponent("warren-taken-\(UUID().uuidString).sqlite").path
        let warren = try WarrenProcess(["serve", "--config", "bridge.toml"], environment: [
            "WARREN_AMQP_URL": "amqp://guest:guest@127.0.0.1:1/%2f",
            "WARREN_HTTP_LISTEN": "127.0.0.1:\(port)",
            "WARREN_STORE_URL": "sqlite://\(database)",
        ])
        defer { warren.terminate() }
        let status = await warren.waitForExit()
        #expect(status == 1, "log:\n\(warren.log)")
        #expect(warren.log.contains("cannot listen"), "log:\n\(warren.log)")
        #expect(!warren.log.contains("crashed"), "log:\n\(warren.log)")
        try await holder.close()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: database + suffix) }
    }

    /// `store.url` names a database the PostgreSQL server does not have: Warren exits at start
    /// with what the server said. Before 2026-11-29 it waited for a connection for good, serving
    /// nothing, with only postgres-nio's "Connection creation failed" lines in the log.
    @Test func aStoreDatabaseThatDoesNotExistStopsWarrenAtStartSayingSo() async throws {
        var url = URLComponents(string: StoreTests.postgresURL)!
        url.path = "/warren_no_such_database"
        let warren = try WarrenProcess(["serve", "--config", "bridge.toml"], environment: [
            "WARREN_STORE_URL": url.string!,
            "WARREN_NODE_ID": "missing-db-\(UUID().uuidString.prefix(6).lowercased())",
            "WARREN_HTTP_LISTEN": "127.0.0.1:\(WarrenProcess.freePort())",
        ])
        defer { warren.terminate() }
        let status = await warren.waitForExit(timeout: .seconds(60))
        #expect(status == 1, "log:\n\(warren.log)")
        #expect(warren.log.contains("cannot open the conversation store")
                && warren.log.contains("database \"warren_no_such_database\" does not exist"), "log:\n\(warren.log)")
    }

    /// A malformed URL is a configuration error naming the key: Warren stops at start.
    @Test func malformedURLIsAClearConfigError() async throws {
        let warren = try WarrenProcess(["check", "--config", "bridge.toml"], environment: ["WARREN_AMQP_URL": "rabbit://nowhere"])
        let status = await warren.waitForExit()
        #expect(status != nil && status != 0)
        #expect(warren.log.contains("WARREN_AMQP_URL"))
        #expect(warren.log.contains("scheme must be amqp://"))
    }

    @Test func checkAcceptsTheShippedConfig() async throws {
        let warren = try WarrenProcess(["check", "--config", "bridge.toml"])
        #expect(await warren.waitForExit() == 0, "log:\n\(warren.log)")
        #expect(warren.log.contains("configuration OK"))
    }
}
