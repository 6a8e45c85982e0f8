import Foundation
import Testing
import WarrenCore

@Suite("Operations", .serialized)
struct OperationsTests {
    /// `warren check` names the key and the reason for each broken config, and accepts the shipped one.
    @Test(arguments: [
        ("[amqp]\nurl = \"http://broker\"\n", "amqp.url"),
        ("[amqp]\nheartbeat = \"often\"\n", "amqp.heartbeat"),
        ("[amqp]\nprefetch = 0\n", "amqp.prefetch"),
        ("[amqp]\nexchnage = \"chat\"\n", "amqp.exchnage"),
        ("[http]\nlisten = \"everywhere\"\n", "http.listen"),
        ("[auth]\nmode = \"magic\"\n", "auth.mode"),
        ("[auth]\nmode = \"token\"\nsecret = \"short\"\n", "auth.secret"),
        ("[acl]\nsubscribe = [\"#.{user}..#\"]\n", "acl.subscribe"),
        ("[[route]]\nname = \"rooms\"\npattern = \"room..#\"\n", "route.pattern"),
        ("[inbox]\nqueue_type = \"stream\"\n", "inbox.queue_type"),
        ("[limits]\nmax_message_bytes = -5\n", "limits.max_message_bytes"),
        ("[limits]\noutbound_hard_cap_bytes = -1\n", "limits.outbound_hard_cap_bytes"),
        ("[websocket]\nslow_grace = 601\n", "websocket.slow_grace"),
        ("[log]\nlevel = \"loud\"\n", "log.level"),
        ("[nonsense]\na = 1\n", "nonsense"),
        ("[amqp\nurl = 1\n", "(file)"),
    ])
    func checkRejectsBrokenConfigs(config: String, key: String) async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("warren-\(UUID().uuidString).toml")
        try config.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let check = try WarrenProcess(["check", "--config", file.path])
        // EX_CONFIG, with the reason and no usage text (it is not a usage error).
        #expect(await check.waitForExit() == 78)
        #expect(check.log.contains(key), "\(check.log)")
        #expect(!check.log.contains("Usage:"), "\(check.log)")
    }

    @Test func checkAcceptsTheShippedConfig() async throws {
        let check = try WarrenProcess(["check", "--config", "bridge.toml"])
        #expect(await check.waitForExit() == 0, "\(check.log)")
    }

    /// `warren token` without a key to sign with is a configuration error too: EX_CONFIG and
    /// the reason, no usage text.
    @Test func tokenWithoutAKeyIsAConfigurationError() async throws {
        let token = try WarrenProcess(["token", "--config", "bridge.toml", "--user", "alice"],
                                      environment: ["WARREN_AUTH_MODE": "none", "WARREN_AUTH_SECRET": ""])
        #expect(await token.waitForExit() == 78)
        #expect(token.log.contains("cannot sign tokens"), "\(token.log)")
        #expect(!token.log.contains("Usage:"), "\(token.log)")
    }
}
