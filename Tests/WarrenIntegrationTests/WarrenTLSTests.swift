import Foundation
import TestSupport
import Testing
import WarrenCore

@Suite("Warren over TLS to the broker", .serialized)
struct WarrenTLSTests {
    @Test func warrenRunsOverAmqps() async throws {
        let ca = (ProcessInfo.processInfo.environment["WARREN_RABBITMQ_DIR"] ?? "/tmp/warren-rabbitmq") + "/tls/ca.pem"
        let warren = try await WarrenInstance.start(["WARREN_AMQP_URL": "amqps://guest:guest@localhost:5671/%2f",
                                                     "WARREN_AMQP_TLS_CA_FILE": ca])
        defer { Task { await warren.stop() } }
        let user = uniqueUser("tls")
        let s = try await warren.socket(user)
        try await s.subscribe("in", "#.\(user).#", mode: "inbox")
        _ = try await s.request(#"{"op":"pub","route":"\#(user).bob","body":"secret"}"#, expect: "puback")
        #expect(try await s.next(op: "msg").env?["body"] == .string("secret"))
        _ = await s.close()
        // A CA file that cannot be read stops Warren at start, naming the key.
        let untrusting = try WarrenProcess(["check", "--config", "bridge.toml"],
                                           environment: ["WARREN_AMQP_TLS_CA_FILE": "/nonexistent/ca.pem"])
        #expect(await untrusting.waitForExit() != 0)
        #expect(untrusting.log.contains("TLS_CA_FILE: cannot read"), "\(untrusting.log)")
    }
}
